"""Unsqueeze: axes attribute before opset 13, input after."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    if (ctx.get_opset_version() or 13) < 13:
        axes = i64(ctx, list(ctx.get_attribute("axes")))
    else:
        axes = to_i64(ctx, ctx.get_input(1))
    return [ctx.op("Unsqueeze", x, axes)]


EXTENSION = translator("Unsqueeze", convert)
