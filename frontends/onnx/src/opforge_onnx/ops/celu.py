"""Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    alpha = scalar_like(ctx, float(ctx.get_attribute("alpha", 1.0)), x)
    zero, one = scalar_like(ctx, 0, x), scalar_like(ctx, 1, x)
    e = ctx.op("Multiply", alpha, ctx.op("Subtract", ctx.op("Exp", ctx.op("Divide", x, alpha)), one))
    return [ctx.op("Add", ctx.op("Maximum", x, zero), ctx.op("Minimum", e, zero))]


EXTENSION = translator("Celu", convert)
