"""Hardmax: one-hot of the (first) maximum along ``axis``; before opset 13 the input is coerced
to 2-D at ``axis`` like Softmax."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, norm_axis, out, require_rank, scalar_like, shape_of, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    r = require_rank(ctx, x)
    legacy = (ctx.get_opset_version() or 13) < 13
    axis = norm_axis(ctx, int(ctx.get_attribute("axis", 1 if legacy else -1)), r)
    src = out(x)
    if legacy and axis != r - 1:
        src = out(ctx.op("Reshape", x, i64(ctx, [0] * axis + [-1]), special_zero=True))
    topk = ctx.op("TopK", src, i64(ctx, 1), axis=axis, mode="max", sort="value", index_element_type=Type.i64,
                  stable=True)
    idx = ctx.op("Squeeze", topk.output(1), i64(ctx, [axis]))
    depth = ctx.op("Gather", shape_of(ctx, src), i64(ctx, axis), i64(ctx, 0), batch_dims=0)
    y = out(ctx.op("OneHot", idx, depth, scalar_like(ctx, 1, x), scalar_like(ctx, 0, x), axis=axis))
    if legacy and axis != r - 1:
        y = out(ctx.op("Reshape", y, shape_of(ctx, x), special_zero=False))
    return [y]


EXTENSION = translator("Hardmax", convert)
