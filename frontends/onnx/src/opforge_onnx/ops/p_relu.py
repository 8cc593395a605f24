"""PRelu: ONNX broadcasts the slope unidirectionally (numpy rules) where opforge's PRelu wants a
per-channel vector, so it is Select(x < 0, x * slope, x)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x, slope = ctx.get_input(0), ctx.get_input(1)
    neg = ctx.op("Less", x, scalar_like(ctx, 0, x))
    return [ctx.op("Select", neg, ctx.op("Multiply", x, slope), x, auto_broadcast="numpy")]


EXTENSION = translator("PRelu", convert)
