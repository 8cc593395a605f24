"""QuantizeLinear: saturate(round_half_to_even(x / scale) + zero_point) into the zero point's
type (u8 without one); per-axis scales broadcast along ``axis``, blocked ones (``block_size``)
are repeated there (see :mod:`opforge_onnx.ops.dequantize_linear`)."""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, out, require_rank, translator
from opforge_onnx.ops.dequantize_linear import per_axis


def convert(ctx: NodeContext) -> ConversionResult:
    x, scale = ctx.get_input(0), ctx.get_input(1)
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
    q = out(ctx.op("Round", ctx.op("Divide", xs, per_axis(ctx, scale, out(x), axis, r)), mode="half_to_even"))
    if ctx.has_input(2):
        zp = ctx.op("Convert", ctx.get_input(2), destination_type=etype(q))
        q = out(ctx.op("Add", q, per_axis(ctx, out(zp), out(x), axis, r)))
    info = np.iinfo(target.np)
    q = out(ctx.op("Clamp", q, min=float(info.min), max=float(info.max)))
    return [ctx.op("Convert", q, destination_type=target)]


EXTENSION = translator("QuantizeLinear", convert)
