"""Col2Im: Col2Im-15 (2-D images; OpenVINO's op has no other rank). ONNX's ``pads`` list the
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
    if n != 2:
        raise ctx.error(f"only 2-D images are supported (image_shape has {n} values)")
    pads = list(ctx.get_attribute("pads", [0, 0, 0, 0]))
    return [ctx.op("Col2Im", ctx.get_input(0), shape, to_i64(ctx, ctx.get_input(2)),
                   strides=list(ctx.get_attribute("strides", [1, 1])),
                   dilations=list(ctx.get_attribute("dilations", [1, 1])),
                   pads_begin=pads[:2], pads_end=pads[2:])]


EXTENSION = translator("Col2Im", convert)
