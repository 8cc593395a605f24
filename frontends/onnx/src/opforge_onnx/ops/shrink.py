"""Shrink: x + bias where x < -lambd, x - bias where x > lambd, else 0."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    lambd = float(ctx.get_attribute("lambd", 0.5))
    bias = float(ctx.get_attribute("bias", 0.0))
    lo = ctx.op("Less", x, scalar_like(ctx, -lambd, x))
    hi = ctx.op("Greater", x, scalar_like(ctx, lambd, x))
    zero = scalar_like(ctx, 0, x)
    y = ctx.op("Select", hi, ctx.op("Subtract", x, scalar_like(ctx, bias, x)), zero)
    return [ctx.op("Select", lo, ctx.op("Add", x, scalar_like(ctx, bias, x)), y)]


EXTENSION = translator("Shrink", convert)
