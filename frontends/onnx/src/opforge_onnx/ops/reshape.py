"""Reshape: shape from an attribute before opset 5; allowzero (opset 14) is special_zero's negation."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    if (ctx.get_opset_version() or 5) < 5:
        shape = i64(ctx, list(ctx.get_attribute("shape")))
    else:
        shape = to_i64(ctx, ctx.get_input(1))
    allowzero = bool(ctx.get_attribute("allowzero", 0))
    return [ctx.op("Reshape", x, shape, special_zero=not allowzero)]


EXTENSION = translator("Reshape", convert)
