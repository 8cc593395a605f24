"""ThresholdedRelu: x * (x > alpha), the decomposition of OpenVINO's extension example."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    alpha = scalar_like(ctx, float(ctx.get_attribute("alpha", 1.0)), x)
    mask = ctx.op("Convert", ctx.op("Greater", x, alpha), destination_type=etype(x))
    return [ctx.op("Multiply", x, mask)]


EXTENSION = translator("ThresholdedRelu", convert)
