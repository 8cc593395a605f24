"""Slice: attributes before opset 10, inputs (starts, ends, axes, steps) after; Slice-8."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import const_value, i64, out, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    if (ctx.get_opset_version() or 10) < 10:
        begin_v = list(ctx.get_attribute("starts"))
        end_v = list(ctx.get_attribute("ends"))
        axes_v = ctx.get_attribute("axes", list(range(len(begin_v))))
        return [ctx.op("Slice", x, i64(ctx, begin_v), i64(ctx, end_v), i64(ctx, [1] * len(begin_v)), i64(ctx, axes_v))]
    starts, ends = to_i64(ctx, ctx.get_input(1)), to_i64(ctx, ctx.get_input(2))
    sv = const_value(starts)
    if ctx.has_input(4):
        steps = to_i64(ctx, ctx.get_input(4))
    elif sv is not None:
        steps = i64(ctx, np.ones(sv.shape, np.int64))
    else:
        steps = out(ctx.op("Broadcast", i64(ctx, 1), ctx.op("ShapeOf", starts), mode="numpy"))
    if ctx.has_input(3):
        return [ctx.op("Slice", x, starts, ends, steps, to_i64(ctx, ctx.get_input(3)))]
    return [ctx.op("Slice", x, starts, ends, steps)]


EXTENSION = translator("Slice", convert)
