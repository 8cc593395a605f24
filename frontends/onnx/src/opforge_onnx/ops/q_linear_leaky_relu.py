"""com.microsoft QLinearLeakyRelu (ONNX Runtime's QOperator format): quantize(LeakyRelu(dequantize(X)))
with the ``alpha`` attribute (default 0.01), LeakyRelu as the standard translator writes it (see
:mod:`opforge_onnx.ops._qlinear`)."""

from __future__ import annotations

from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops import leaky_relu
from opforge_onnx.ops._qlinear import float_op, unary


def leaky(ctx: NodeContext, x: Output) -> Output:
    return float_op(ctx, leaky_relu.EXTENSION, [x], {"alpha": float(ctx.get_attribute("alpha", 0.01))}, 16)


EXTENSION = unary("QLinearLeakyRelu", leaky)
