"""CumProd (opset 26) has no OpenVINO op. It is built as a Hillis-Steele scan: after step k
every element holds the product of the 2^k elements ending at it, so ceil(log2 n) steps of
"multiply by the tensor shifted 2^k places along the axis (filled with ones)" give the inclusive
product. Only multiplications are used, so zeros, negatives and integer wrap-around come out as
a sequential product gives them (a logarithm-based decomposition would not). The axis may be
computed at run time: shifts are Pad + Slice with run-time pads; the number of steps comes from
the largest static dimension, so the input shape must be static.
"""

from __future__ import annotations

import math

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import INT_MAX, etype, i64, out, require_rank, shape_of, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    r = require_rank(ctx, x)
    ps = out(x).partial_shape
    if not ps.is_static:
        raise ctx.error(f"the input shape {ps} must be static (the scan's step count depends on it)")
    if r == 0:
        return [x]
    axis = out(ctx.op("Reshape", to_i64(ctx, ctx.get_input(1)), i64(ctx, [1]), special_zero=False))
    axis = out(ctx.op("Select", ctx.op("Less", axis, i64(ctx, [0])), ctx.op("Add", axis, i64(ctx, [r])), axis))
    t = etype(x)
    one = ctx.const(np.ones((), t.np))
    length = out(ctx.op("Gather", shape_of(ctx, x), axis, i64(ctx, 0), batch_dims=0))
    on_axis = out(ctx.op("Convert", ctx.op("Equal", i64(ctx, np.arange(r)), axis), destination_type=Type.i64))
    zeros = i64(ctx, [0] * r)

    def shifted(v: Output, k: int) -> Output:
        padded = ctx.op("Pad", v, ctx.op("Multiply", on_axis, i64(ctx, [k])), zeros, one, pad_mode="constant")
        return out(ctx.op("Slice", padded, i64(ctx, [0]), length, i64(ctx, [1]), axis))

    def flipped(v: Output) -> Output:
        return out(ctx.op("Slice", v, i64(ctx, [-1]), i64(ctx, [-INT_MAX]), i64(ctx, [-1]), axis))

    reverse = bool(int(ctx.get_attribute("reverse", 0)))
    y = flipped(out(x)) if reverse else out(x)
    if int(ctx.get_attribute("exclusive", 0)):
        y = shifted(y, 1)
    longest = max(ps.to_tuple())
    for step in range(math.ceil(math.log2(longest)) if longest > 1 else 0):
        y = out(ctx.op("Multiply", y, shifted(y, 2**step)))
    return [flipped(y) if reverse else y]


EXTENSION = translator("CumProd", convert)
