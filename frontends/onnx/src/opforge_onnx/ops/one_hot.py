"""OneHot: indices and depth as i64 (ONNX casts them), negative indices count from ``depth``,
then OneHot with off/on taken from ``values``."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    values = ctx.get_input(2)
    idx = to_i64(ctx, ctx.get_input(0))
    depth = ctx.op("Reshape", to_i64(ctx, ctx.get_input(1)), i64(ctx, []), special_zero=False)
    neg = ctx.op("Less", idx, i64(ctx, 0))
    idx = ctx.op("Select", neg, ctx.op("Add", idx, depth), idx).output(0)
    off = ctx.op("Gather", values, i64(ctx, 0), i64(ctx, 0), batch_dims=0)
    on = ctx.op("Gather", values, i64(ctx, 1), i64(ctx, 0), batch_dims=0)
    return [ctx.op("OneHot", idx, depth, on, off, axis=int(ctx.get_attribute("axis", -1)))]


EXTENSION = translator("OneHot", convert)
