"""BatchNormalization (inference): BatchNormInference, inputs in the same order as ONNX."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    x, scale, bias, mean, var = (ctx.get_input(i) for i in range(5))
    eps = float(ctx.get_attribute("epsilon", 1e-5))
    if int(ctx.get_attribute("training_mode", 0)):
        raise ctx.error("training_mode=1 computes batch statistics; opforge converts inference graphs only")
    y = ctx.op("BatchNormInference", x, scale, bias, mean, var, epsilon=eps)
    return [y]


EXTENSION = translator("BatchNormalization", convert)
