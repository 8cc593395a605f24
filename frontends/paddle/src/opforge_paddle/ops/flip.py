"""flip (X -> Out): reverse X along ``axis`` -> Reverse."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, norm_axis, out, rank, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    r = rank(ctx, x, "input 'X'")
    axis = ctx.get_attribute("axis")
    axes = [norm_axis(ctx, int(a), r) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    return {"Out": out(ctx.op("Reverse", x, i64(ctx, axes), mode="index"))}


EXTENSION = translator("flip", convert)

PIR = unary("flip")
