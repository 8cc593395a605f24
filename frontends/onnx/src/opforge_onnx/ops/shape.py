"""Shape: a constant when the input's shape is static (as OpenVINO folds ShapeOf), else ShapeOf;
opset 15's start/end slice it."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import INT_MAX, i64, out, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    ps = out(x).partial_shape
    start = int(ctx.get_attribute("start", 0))
    end = ctx.get_attribute("end", None)
    if ps.is_static:
        dims = list(ps.to_tuple())
        return [i64(ctx, dims[start:end if end is None else int(end)])]
    s = ctx.op("ShapeOf", x, output_type=Type.i64)
    if start == 0 and end is None:
        return [s]
    stop = INT_MAX if end is None else int(end)
    return [ctx.op("Slice", s, i64(ctx, [start]), i64(ctx, [stop]), i64(ctx, [1]), i64(ctx, [0]))]


EXTENSION = translator("Shape", convert)
