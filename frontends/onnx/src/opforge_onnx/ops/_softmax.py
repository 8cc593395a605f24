"""Shared conversion of Softmax and LogSoftmax (each has its own module). Before opset 13 the input is coerced to 2-D at ``axis`` (default 1):
the op normalises over all dims from ``axis`` on, so it is computed on a reshaped tensor."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, norm_axis, require_rank, shape_of, translator


def make(target: str) -> ConversionExtension:
    def convert(ctx: NodeContext) -> ConversionResult:
        x = ctx.get_input(0)
        if (ctx.get_opset_version() or 13) >= 13:
            return [ctx.op(target, x, axis=int(ctx.get_attribute("axis", -1)))]
        r = require_rank(ctx, x)
        axis = norm_axis(ctx, int(ctx.get_attribute("axis", 1)), r) if r else 0
        if axis == r - 1:
            return [ctx.op(target, x, axis=axis)]
        flat = ctx.op("Reshape", x, i64(ctx, [0] * axis + [-1]), special_zero=True)
        y = ctx.op(target, flat, axis=axis)
        return [ctx.op("Reshape", y, shape_of(ctx, x), special_zero=False)]
    convert.__qualname__ = f"convert_{target}"
    return translator(target, convert)
