"""HardSigmoid: max(0, min(1, alpha * x + beta)) as Clamp of an affine map."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    alpha = scalar_like(ctx, float(ctx.get_attribute("alpha", 0.2)), x)
    beta = scalar_like(ctx, float(ctx.get_attribute("beta", 0.5)), x)
    return [ctx.op("Clamp", ctx.op("Add", ctx.op("Multiply", x, alpha), beta), min=0.0, max=1.0)]


EXTENSION = translator("HardSigmoid", convert)
