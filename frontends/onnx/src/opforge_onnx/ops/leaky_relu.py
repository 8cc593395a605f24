"""LeakyRelu: PRelu with a scalar slope."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    return [ctx.op("PRelu", x, scalar_like(ctx, float(ctx.get_attribute("alpha", 0.01)), x))]


EXTENSION = translator("LeakyRelu", convert)
