"""Shared conversion of ArgMax and ArgMin (each has its own module) through TopK with k=1 (stable, so the first index wins ties);
select_last_index reverses the axis first and maps the index back."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, norm_axis, out, require_rank, shape_of, translator


def make(onnx_op: str, mode: str) -> ConversionExtension:
    def convert(ctx: NodeContext) -> ConversionResult:
        x = ctx.get_input(0)
        r = require_rank(ctx, x)
        axis = norm_axis(ctx, int(ctx.get_attribute("axis", 0)), r)
        keep = bool(ctx.get_attribute("keepdims", 1))
        last = bool(ctx.get_attribute("select_last_index", 0))
        src = out(x)
        if last:
            src = out(ctx.op("Slice", x, i64(ctx, [-1]), i64(ctx, [-(2**62)]), i64(ctx, [-1]), i64(ctx, [axis])))
        node = ctx.op("TopK", src, i64(ctx, 1), axis=axis, mode=mode, sort="value",
                      index_element_type=Type.i64, stable=True)
        idx = node.output(1)
        if last:
            dim = ctx.op("Gather", shape_of(ctx, x), i64(ctx, axis), i64(ctx, 0), batch_dims=0)
            idx = out(ctx.op("Subtract", ctx.op("Subtract", dim, i64(ctx, 1)), idx))
        if not keep:
            idx = out(ctx.op("Squeeze", idx, i64(ctx, [axis])))
        return [idx]
    convert.__qualname__ = f"convert_{onnx_op}"
    return translator(onnx_op, convert)
