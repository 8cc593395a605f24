"""Compress: Gather of the indices where the condition is true (flattened when no axis)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import i64, out, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x, cond = ctx.get_input(0), ctx.get_input(1)
    src: Output = out(x)
    if ctx.has_attribute("axis"):
        axis = int(ctx.get_attribute("axis"))
    else:
        src = out(ctx.op("Reshape", x, i64(ctx, [-1]), special_zero=False))
        axis = 0
    idx = ctx.op("Squeeze", ctx.op("NonZero", cond, output_type="i64"), i64(ctx, [0]))
    return [ctx.op("Gather", src, idx, i64(ctx, axis), batch_dims=0)]


EXTENSION = translator("Compress", convert)
