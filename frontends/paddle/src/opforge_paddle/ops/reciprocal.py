"""reciprocal (X -> Out): 1 / x."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, scalar_like, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    return {"Out": out(ctx.op("Divide", scalar_like(ctx, 1.0, x), x))}


EXTENSION = translator("reciprocal", convert)

PIR = unary("reciprocal")
