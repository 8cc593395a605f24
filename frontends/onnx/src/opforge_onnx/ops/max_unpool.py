"""MaxUnpool: the values scattered into a zero tensor at the flat indices MaxPool returned
(ONNX indices count over the whole unpooled tensor, batch and channel included), as
ScatterElementsUpdate on the flattened tensor, then reshaped to ``(in - 1) * stride - pads +
kernel`` per spatial axis. A larger ``output_shape`` input zero-pads that at the end of each axis
(the indices keep addressing the unpadded layout, as in ONNX's reference)."""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, i64, out, require_rank, shape_of, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x, idx = ctx.get_input(0), ctx.get_input(1)
    r = require_rank(ctx, x)
    n = r - 2
    kernel = [int(k) for k in ctx.get_attribute("kernel_shape")]
    strides = [int(s) for s in ctx.get_attribute("strides", [1] * n)]
    pads = [int(p) for p in ctx.get_attribute("pads", [0] * (2 * n))]
    extra = [k - pads[i] - pads[n + i] - s for i, (k, s) in enumerate(zip(kernel, strides))]
    dims = shape_of(ctx, x)
    spatial = ctx.op("Slice", dims, i64(ctx, [2]), i64(ctx, [r]), i64(ctx, [1]))
    grown = ctx.op("Add", ctx.op("Multiply", spatial, i64(ctx, strides)), i64(ctx, extra))
    head = ctx.op("Slice", dims, i64(ctx, [0]), i64(ctx, [2]), i64(ctx, [1]))
    target = out(ctx.op("Concat", head, grown, axis=0))
    total = ctx.op("ReduceProd", target, i64(ctx, [0]), keep_dims=True)
    t = etype(x)
    zeros = ctx.op("Broadcast", ctx.const(np.zeros((), t.np if t is not Type.dynamic else np.float32)), total,
                   mode="numpy")
    flat_idx = ctx.op("Reshape", to_i64(ctx, idx), i64(ctx, [-1]), special_zero=False)
    flat_x = ctx.op("Reshape", x, i64(ctx, [-1]), special_zero=False)
    scattered = ctx.op("ScatterElementsUpdate", zeros, flat_idx, flat_x, i64(ctx, 0), reduction="none",
                       use_init_val=True)
    y = ctx.op("Reshape", scattered, target, special_zero=False)
    if ctx.has_input(2):
        grow = ctx.op("Subtract", to_i64(ctx, ctx.get_input(2)), target)
        y = ctx.op("Pad", y, i64(ctx, [0] * r), grow, ctx.const(np.zeros((), etype(x).np)), pad_mode="constant")
    return [y]


EXTENSION = translator("MaxUnpool", convert)
