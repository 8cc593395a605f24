"""DequantizeLinear: (x - zero_point) * scale in the scale's type; per-axis scales are reshaped
to broadcast along ``axis``. Blocked quantization (opset 21 block_size) is not supported."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import etype, i64, norm_axis, out, rank, require_rank, translator


def broadcast_along(ctx: NodeContext, v: Output, axis: int, r: int) -> Output:
    """A 1-D per-axis tensor reshaped to [1, .., C, .., 1] so it broadcasts at ``axis``."""
    if rank(v) != 1 or r <= 1:
        return v
    axis = norm_axis(ctx, axis, r)
    return out(ctx.op("Reshape", v, i64(ctx, [1] * axis + [-1] + [1] * (r - axis - 1)), special_zero=False))


def convert(ctx: NodeContext) -> ConversionResult:
    x, scale = ctx.get_input(0), ctx.get_input(1)
    if int(ctx.get_attribute("block_size", 0)):
        raise ctx.error("blocked quantization (block_size) is not supported")
    r = require_rank(ctx, x)
    axis = int(ctx.get_attribute("axis", 1))  # only used (and checked) for per-axis scales
    t = etype(scale)
    xf = out(ctx.op("Convert", x, destination_type=t))
    if ctx.has_input(2):
        zp = ctx.op("Convert", ctx.get_input(2), destination_type=t)
        xf = out(ctx.op("Subtract", xf, broadcast_along(ctx, out(zp), axis, r)))
    y = out(ctx.op("Multiply", xf, broadcast_along(ctx, scale, axis, r)))
    if ctx.has_attribute("output_dtype") and int(ctx.get_attribute("output_dtype")):
        y = out(ctx.op("Convert", y, destination_type=ctx.get_attribute("output_dtype", dtype=Type)))
    return [y]


EXTENSION = translator("DequantizeLinear", convert)
