"""LpNormalization: x / ||x||_p along ``axis`` (p = 1 or 2). A zero vector stays zero (ONNX's
reference gives 0, not 0/0): its norm is replaced by 1 before dividing."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    p = int(ctx.get_attribute("p", 2))
    if p not in (1, 2):
        raise ctx.error(f"p={p} is not supported; ONNX allows 1 or 2")
    norm = ctx.op("ReduceL2" if p == 2 else "ReduceL1", x, i64(ctx, [int(ctx.get_attribute("axis", -1))]),
                  keep_dims=True)
    safe = ctx.op("Select", ctx.op("Equal", norm, scalar_like(ctx, 0, x)), scalar_like(ctx, 1, x), norm)
    return [ctx.op("Divide", x, safe, m_pythondiv=False)]


EXTENSION = translator("LpNormalization", convert)
