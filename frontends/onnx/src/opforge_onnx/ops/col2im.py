"""Col2Im: Col2Im-15, 2-D images or (beyond OpenVINO's op) 3-D volumes. ONNX's ``pads`` list the
begins then the ends."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import const_value, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    shape = to_i64(ctx, ctx.get_input(1))
    ps = shape.partial_shape
    n = ps.dims[0] if ps.rank == 1 else None
    v = const_value(shape)
    n = n if n is not None else (None if v is None else v.size)
    if n not in (2, 3):
        raise ctx.error(f"only 2-D images and 3-D volumes are supported (image_shape has {n} values)")
    pads = list(ctx.get_attribute("pads", [0] * (2 * n)))
    return [ctx.op("Col2Im", ctx.get_input(0), shape, to_i64(ctx, ctx.get_input(2)),
                   strides=list(ctx.get_attribute("strides", [1] * n)),
                   dilations=list(ctx.get_attribute("dilations", [1] * n)),
                   pads_begin=pads[:n], pads_end=pads[n:])]


EXTENSION = translator("Col2Im", convert)
