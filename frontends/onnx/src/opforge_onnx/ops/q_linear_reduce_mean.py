"""com.microsoft QLinearReduceMean (ONNX Runtime's QOperator format):
quantize(ReduceMean(dequantize(data))) over ``axes`` (all axes when absent), ``keepdims``, as
ReduceMean-13 (axes an attribute). See :mod:`opforge_onnx.ops._qlinear`; over H and W of an
image, kept, the CPU runs it as its int8 average pool."""

from __future__ import annotations

from typing import Any

from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops import reduce_mean
from opforge_onnx.ops._qlinear import float_op, unary


def mean(ctx: NodeContext, x: Output) -> Output:
    attrs: dict[str, Any] = {"keepdims": int(ctx.get_attribute("keepdims", 1, dtype=int))}
    if ctx.has_attribute("axes"):
        attrs["axes"] = [int(a) for a in ctx.get_attribute("axes", dtype=list)]
    return float_op(ctx, reduce_mean.EXTENSION, [x], attrs, 13)


EXTENSION = unary("QLinearReduceMean", mean)
