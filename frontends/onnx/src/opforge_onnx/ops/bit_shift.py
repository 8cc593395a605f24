"""BitShift: x * 2**y (LEFT) or x // 2**y (RIGHT) for the unsigned types ONNX allows."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x, y = ctx.get_input(0), ctx.get_input(1)
    factor = ctx.op("Power", scalar_like(ctx, 2, x), y)
    if str(ctx.get_attribute("direction")) == "LEFT":
        return [ctx.op("Multiply", x, factor)]
    return [ctx.op("Divide", x, factor, m_pythondiv=True)]


EXTENSION = translator("BitShift", convert)
