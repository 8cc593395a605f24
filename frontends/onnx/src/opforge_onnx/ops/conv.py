"""Conv: Convolution, or GroupConvolution when group > 1; the bias is an Add."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import (
    INT_MAX,
    auto_pad,
    i64,
    out,
    require_rank,
    reshape_for_channel,
    shape_of,
    spatial_attrs,
    translator,
)


def grouped_filters(ctx: NodeContext, w: Output, group: int) -> Output:
    """Split the filter's first dim into groups: [A, B, k...] -> [G, A/G, B, k...] (the layout
    of GroupConvolution and GroupConvolutionBackpropData alike)."""
    ps = out(w).partial_shape
    require_rank(ctx, w, "the filter")
    if ps.is_static:
        target = i64(ctx, [group, ps.dims[0] // group, *ps.dims[1:]])  # type: ignore[operator]
    else:
        tail = ctx.op("Slice", shape_of(ctx, w), i64(ctx, [1]), i64(ctx, [INT_MAX]), i64(ctx, [1]))
        target = out(ctx.op("Concat", i64(ctx, [group, -1]), tail, axis=0))
    return out(ctx.op("Reshape", w, target, special_zero=False))


def convert(ctx: NodeContext) -> ConversionResult:
    x, w = ctx.get_input(0), ctx.get_input(1)
    r = require_rank(ctx, w, "the filter")
    n = r - 2
    attrs = spatial_attrs(ctx, n)
    group = int(ctx.get_attribute("group", 1))
    pad = auto_pad(ctx)
    if group == 1:
        y = ctx.op("Convolution", x, w, auto_pad=pad, **attrs)
    else:
        y = ctx.op("GroupConvolution", x, grouped_filters(ctx, w, group), auto_pad=pad, **attrs)
    if ctx.has_input(2):
        y = ctx.op("Add", y, reshape_for_channel(ctx, ctx.get_input(2), r))
    return [y]


EXTENSION = translator("Conv", convert)
