"""LpNormalization: x / ||x||_p along ``axis`` (p = 1 or 2)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    p = int(ctx.get_attribute("p", 2))
    if p not in (1, 2):
        raise ctx.error(f"p={p} is not supported; ONNX allows 1 or 2")
    norm = ctx.op("ReduceL2" if p == 2 else "ReduceL1", x, i64(ctx, [int(ctx.get_attribute("axis", -1))]),
                  keep_dims=True)
    return [ctx.op("Divide", x, norm, m_pythondiv=False)]


EXTENSION = translator("LpNormalization", convert)
