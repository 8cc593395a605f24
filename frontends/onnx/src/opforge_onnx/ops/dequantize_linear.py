"""DequantizeLinear: (x - zero_point) * scale in the scale's type; per-axis scales are reshaped
to broadcast along ``axis``; blocked scales (opset 21 ``block_size``: one scale per block of
``block_size`` elements along ``axis``) are repeated to the input's size there."""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import etype, i64, norm_axis, out, rank, require_rank, shape_of, translator


def broadcast_along(ctx: NodeContext, v: Output, axis: int, r: int) -> Output:
    """A 1-D per-axis tensor reshaped to [1, .., C, .., 1] so it broadcasts at ``axis``."""
    if rank(v) != 1 or r <= 1:
        return v
    axis = norm_axis(ctx, axis, r)
    return out(ctx.op("Reshape", v, i64(ctx, [1] * axis + [-1] + [1] * (r - axis - 1)), special_zero=False))


def expand_blocks(ctx: NodeContext, v: Output, x: Output, axis: int, block: int) -> Output:
    """Blocked scales or zero points [..., ceil(D / block), ...] repeated ``block`` times along
    ``axis`` and cut to the input's D: [..., D, ...]."""
    r = require_rank(ctx, x)
    if rank(v) != r:
        raise ctx.error(f"blocked quantization needs scales of the input's rank {r}, got rank {rank(v)}")
    axis = norm_axis(ctx, axis, r)
    grow_after = np.ones(r + 1, np.int64)
    grow_after[axis + 1] = block
    grow = np.ones(r, np.int64)
    grow[axis] = block
    u = ctx.op("Unsqueeze", v, i64(ctx, [axis + 1]))
    b = ctx.op("Broadcast", u, ctx.op("Multiply", shape_of(ctx, u), i64(ctx, grow_after)), mode="numpy")
    flat = ctx.op("Reshape", b, ctx.op("Multiply", shape_of(ctx, v), i64(ctx, grow)), special_zero=False)
    d = ctx.op("Gather", shape_of(ctx, x), i64(ctx, [axis]), i64(ctx, 0), batch_dims=0)
    return out(ctx.op("Slice", flat, i64(ctx, [0]), d, i64(ctx, [1]), i64(ctx, [axis])))


def per_axis(ctx: NodeContext, v: Output, x: Output, axis: int, r: int) -> Output:
    """A scale or zero point shaped to broadcast against ``x``: blocked, per-axis or scalar."""
    block = int(ctx.get_attribute("block_size", 0))
    if block:
        return expand_blocks(ctx, v, x, axis, block)
    return broadcast_along(ctx, v, axis, r)


def convert(ctx: NodeContext) -> ConversionResult:
    x, scale = ctx.get_input(0), ctx.get_input(1)
    r = require_rank(ctx, x)
    axis = int(ctx.get_attribute("axis", 1))  # only used (and checked) for per-axis scales
    t = etype(scale)
    xf = out(ctx.op("Convert", x, destination_type=t))
    if ctx.has_input(2):
        zp = ctx.op("Convert", ctx.get_input(2), destination_type=t)
        xf = out(ctx.op("Subtract", xf, per_axis(ctx, out(zp), x, axis, r)))
    y = out(ctx.op("Multiply", xf, per_axis(ctx, scale, x, axis, r)))
    if ctx.has_attribute("output_dtype") and int(ctx.get_attribute("output_dtype")):
        y = out(ctx.op("Convert", y, destination_type=ctx.get_attribute("output_dtype", dtype=Type)))
    return [y]


EXTENSION = translator("DequantizeLinear", convert)
