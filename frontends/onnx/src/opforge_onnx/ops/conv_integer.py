"""ConvInteger: i32 Convolution (GroupConvolution for group > 1) of the zero-point-centred input
and filter; the filter's zero point may be per output channel."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import auto_pad, require_rank, spatial_attrs, translator
from opforge_onnx.ops._integer import centered
from opforge_onnx.ops.conv import grouped_filters


def convert(ctx: NodeContext) -> ConversionResult:
    r = require_rank(ctx, ctx.get_input(1), "the filter")
    x = centered(ctx, ctx.get_input(0), ctx.get_input(2) if ctx.has_input(2) else None)
    w = centered(ctx, ctx.get_input(1), ctx.get_input(3) if ctx.has_input(3) else None, r)
    attrs = spatial_attrs(ctx, r - 2)
    group = int(ctx.get_attribute("group", 1))
    if group == 1:
        return [ctx.op("Convolution", x, w, auto_pad=auto_pad(ctx), **attrs)]
    return [ctx.op("GroupConvolution", x, grouped_filters(ctx, w, group), auto_pad=auto_pad(ctx), **attrs)]


EXTENSION = translator("ConvInteger", convert)
