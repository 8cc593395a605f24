"""EyeLike: ones on diagonal k of a 2-D tensor shaped like the input."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, i64, shape_of, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    t = ctx.get_attribute("dtype", dtype=Type) if ctx.has_attribute("dtype") else etype(x)
    k = int(ctx.get_attribute("k", 0))
    shape = shape_of(ctx, x)
    rows_n = ctx.op("Gather", shape, i64(ctx, 0), i64(ctx, 0), batch_dims=0)
    cols_n = ctx.op("Gather", shape, i64(ctx, 1), i64(ctx, 0), batch_dims=0)
    rows = ctx.op("Unsqueeze", ctx.op("Range", i64(ctx, 0), rows_n, i64(ctx, 1), output_type="i64"), i64(ctx, [1]))
    cols = ctx.op("Range", i64(ctx, 0), cols_n, i64(ctx, 1), output_type="i64")
    eq = ctx.op("Equal", ctx.op("Subtract", cols, rows), i64(ctx, k))
    return [ctx.op("Convert", eq, destination_type=t)]


EXTENSION = translator("EyeLike", convert)
