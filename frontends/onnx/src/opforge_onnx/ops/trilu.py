"""Trilu: keep the upper (or lower) triangle from diagonal k: Select on (col - row) vs k."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, out, require_rank, scalar_like, shape_of, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    r = require_rank(ctx, x)
    shape = shape_of(ctx, x)
    rows_n = ctx.op("Gather", shape, i64(ctx, r - 2), i64(ctx, 0), batch_dims=0)
    cols_n = ctx.op("Gather", shape, i64(ctx, r - 1), i64(ctx, 0), batch_dims=0)
    rows = ctx.op("Unsqueeze", ctx.op("Range", i64(ctx, 0), rows_n, i64(ctx, 1), output_type="i64"), i64(ctx, [1]))
    cols = ctx.op("Range", i64(ctx, 0), cols_n, i64(ctx, 1), output_type="i64")
    diag = ctx.op("Subtract", cols, rows)
    k = out(ctx.op("Reshape", ctx.get_input(1), i64(ctx, []), special_zero=False)) if ctx.has_input(1) else i64(ctx, 0)
    upper = bool(ctx.get_attribute("upper", 1))
    keep = ctx.op("GreaterEqual" if upper else "LessEqual", diag, k)
    return [ctx.op("Select", keep, x, scalar_like(ctx, 0, x), auto_broadcast="numpy")]


EXTENSION = translator("Trilu", convert)
