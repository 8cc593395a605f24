"""HardSigmoid: max(0, min(1, alpha * x + beta)) as Clamp of an affine map; with MobileNetV3's
alpha = 1/6 (within 1e-6), beta = 1/2 (what torch and Paddle export for hardsigmoid) it is HSigmoid
(min(max(x + 3, 0), 6) / 6, the same function), one op that a device fuses into the
convolution before it (the CPU device's squeeze-and-excitation gate), as OpenVINO's
HSigmoidFusion does."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    alpha, beta = float(ctx.get_attribute("alpha", 0.2)), float(ctx.get_attribute("beta", 0.5))
    # Paddle writes alpha as 0.1666667 (1.8e-7 from 1/6): HSigmoid then differs from the affine
    # map by at most ~2e-7 * |x| below the clamp, well inside f32 model tolerances
    if abs(alpha - 1.0 / 6.0) <= 1e-6 and beta == 0.5 and x.element_type.is_float:
        return [ctx.op("HSigmoid", x)]
    a, b = scalar_like(ctx, alpha, x), scalar_like(ctx, beta, x)
    return [ctx.op("Clamp", ctx.op("Add", ctx.op("Multiply", x, a), b), min=0.0, max=1.0)]


EXTENSION = translator("HardSigmoid", convert)
