"""log_softmax (X -> Out) along ``axis`` -> LogSoftmax."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import norm_axis, out, rank, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    axis = norm_axis(ctx, int(ctx.get_attribute("axis", -1)), rank(ctx, x, "input 'X'"))
    return {"Out": out(ctx.op("LogSoftmax", x, axis=axis))}


EXTENSION = translator("log_softmax", convert)

PIR = unary("log_softmax")
