"""matmul, the legacy v1 op (X, Y -> Out; transpose_X, transpose_Y) -> MatMul, scaled by ``alpha``."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    r = ctx.op("MatMul", x, ctx.get_input("Y"), transpose_a=bool(ctx.get_attribute("transpose_X", False)),
               transpose_b=bool(ctx.get_attribute("transpose_Y", False)))
    alpha = float(ctx.get_attribute("alpha", 1.0))
    if alpha != 1.0:
        r = ctx.op("Multiply", r, scalar_like(ctx, alpha, x))
    return {"Out": out(r)}


EXTENSION = translator("matmul", convert)
