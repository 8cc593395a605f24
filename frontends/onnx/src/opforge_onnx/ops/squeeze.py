"""Squeeze: axes attribute before opset 13, optional input after; none squeezes every 1."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    if (ctx.get_opset_version() or 13) < 13:
        a = ctx.get_attribute("axes", None)
        axes = i64(ctx, list(a)) if a is not None else None
    else:
        axes = to_i64(ctx, ctx.get_input(1)) if ctx.has_input(1) else None
    return [ctx.op("Squeeze", x, axes)]


EXTENSION = translator("Squeeze", convert)
