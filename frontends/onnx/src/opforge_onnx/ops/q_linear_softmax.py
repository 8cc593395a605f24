"""com.microsoft QLinearSoftmax (ONNX Runtime's QOperator format): quantize(Softmax(dequantize(X)))
where Softmax is the one of the ONNX opset named by the required ``opset`` attribute (before 13
the input is coerced to 2-D at ``axis``; ``axis`` defaults to -1 in this op at every opset). See
:mod:`opforge_onnx.ops._qlinear`."""

from __future__ import annotations

from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops import softmax
from opforge_onnx.ops._qlinear import float_op, unary


def soft(ctx: NodeContext, x: Output) -> Output:
    if not ctx.has_attribute("opset"):
        raise ctx.error("the required attribute 'opset' (the ONNX opset of the Softmax it quantizes) is missing")
    opset = int(ctx.get_attribute("opset", dtype=int))
    if opset < 1:
        raise ctx.error(f"attribute 'opset' = {opset} is not an ONNX opset version")
    return float_op(ctx, softmax.EXTENSION, [x], {"axis": int(ctx.get_attribute("axis", -1, dtype=int))}, opset)


EXTENSION = unary("QLinearSoftmax", soft)
