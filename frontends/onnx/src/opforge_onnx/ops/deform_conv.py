"""DeformConv: DeformableConvolution-8 (2-D) with ``bilinear_interpolation_pad=true``, ONNX
sampling with zeros for neighbours outside the input; the optional bias is an Add."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import require_rank, reshape_for_channel, spatial_attrs, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x, w, offset = ctx.get_input(0), ctx.get_input(1), ctx.get_input(2)
    r = require_rank(ctx, w, "the filter")
    if r != 4:
        raise ctx.error(f"only 2-D deformable convolution is supported (filter rank 4), got rank {r}")
    mask = ctx.get_input(4) if ctx.has_input(4) else None
    y = ctx.op("DeformableConvolution", x, offset, w, mask, auto_pad="explicit",
               group=int(ctx.get_attribute("group", 1)),
               deformable_group=int(ctx.get_attribute("offset_group", 1)),
               bilinear_interpolation_pad=True, **spatial_attrs(ctx, 2))
    if ctx.has_input(3):
        y = ctx.op("Add", y, reshape_for_channel(ctx, ctx.get_input(3), 4))
    return [y]


EXTENSION = translator("DeformConv", convert)
