"""QuantizeLinear: saturate(round_half_to_even(x / scale) + zero_point) into the zero point's
type (u8 without one); per-axis scales broadcast along ``axis``."""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, out, require_rank, translator
from opforge_onnx.ops.dequantize_linear import broadcast_along


def convert(ctx: NodeContext) -> ConversionResult:
    x, scale = ctx.get_input(0), ctx.get_input(1)
    if int(ctx.get_attribute("block_size", 0)):
        raise ctx.error("blocked quantization (block_size) is not supported")
    r = require_rank(ctx, x)
    axis = int(ctx.get_attribute("axis", 1))  # only used (and checked) for per-axis scales
    if ctx.has_input(2):
        target = etype(ctx.get_input(2))
    elif ctx.has_attribute("output_dtype") and int(ctx.get_attribute("output_dtype")):
        target = ctx.get_attribute("output_dtype", dtype=Type)
    else:
        target = Type.u8
    if not target.is_integral:
        raise ctx.error(f"quantizing to {target} is not supported (8/16/32-bit integers only)")
    xs = x if etype(x) == etype(scale) else out(ctx.op("Convert", x, destination_type=etype(scale)))
    q = out(ctx.op("Round", ctx.op("Divide", xs, broadcast_along(ctx, scale, axis, r)), mode="half_to_even"))
    if ctx.has_input(2):
        zp = ctx.op("Convert", ctx.get_input(2), destination_type=etype(q))
        q = out(ctx.op("Add", q, broadcast_along(ctx, out(zp), axis, r)))
    info = np.iinfo(target.np)
    q = out(ctx.op("Clamp", q, min=float(info.min), max=float(info.max)))
    return [ctx.op("Convert", q, destination_type=target)]


EXTENSION = translator("QuantizeLinear", convert)
