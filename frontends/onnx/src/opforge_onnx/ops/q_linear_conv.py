"""QLinearConv: the exact i32 convolution of the zero-point-centred input and filter (filter zero
points and scales may be per output channel), plus the i32 bias, rescaled by
``x_scale * w_scale / y_scale`` and requantized to y's type (see
:mod:`opforge_onnx.ops._integer`)."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import (
    auto_pad,
    etype,
    out,
    rank,
    require_rank,
    reshape_for_channel,
    spatial_attrs,
    translator,
)
from opforge_onnx.ops._integer import centered, requantize
from opforge_onnx.ops.conv import grouped_filters


def convert(ctx: NodeContext) -> ConversionResult:
    r = require_rank(ctx, ctx.get_input(3), "the filter")
    x = centered(ctx, ctx.get_input(0), ctx.get_input(2) if ctx.has_input(2) else None)
    w = centered(ctx, ctx.get_input(3), ctx.get_input(5) if ctx.has_input(5) else None, r)
    attrs = spatial_attrs(ctx, r - 2)
    group = int(ctx.get_attribute("group", 1))
    if group == 1:
        acc = out(ctx.op("Convolution", x, w, auto_pad=auto_pad(ctx), **attrs))
    else:
        acc = out(ctx.op("GroupConvolution", x, grouped_filters(ctx, w, group), auto_pad=auto_pad(ctx), **attrs))
    if ctx.has_input(8):
        bias = ctx.op("Convert", ctx.get_input(8), destination_type=Type.i32)
        acc = out(ctx.op("Add", acc, reshape_for_channel(ctx, bias, r)))
    w_scale: Output = ctx.get_input(4)
    if rank(w_scale) == 1 and w_scale.partial_shape.dims[0] != 1:
        w_scale = reshape_for_channel(ctx, w_scale, r)
    scale = ctx.op("Divide", ctx.op("Multiply", ctx.get_input(1), w_scale), ctx.get_input(6), m_pythondiv=False)
    zp = ctx.get_input(7) if ctx.has_input(7) else None
    qtype = etype(zp) if zp is not None else etype(ctx.get_input(0))
    return [requantize(ctx, acc, out(scale), zp, qtype)]


EXTENSION = translator("QLinearConv", convert)
