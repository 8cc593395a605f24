"""com.microsoft QLinearSigmoid (ONNX Runtime's QOperator format): quantize(Sigmoid(dequantize(X)))
(see :mod:`opforge_onnx.ops._qlinear`; the CPU runs it as a 256-entry table)."""

from __future__ import annotations

from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import out
from opforge_onnx.ops._qlinear import unary


def sigmoid(ctx: NodeContext, x: Output) -> Output:
    return out(ctx.op("Sigmoid", x))


EXTENSION = unary("QLinearSigmoid", sigmoid)
