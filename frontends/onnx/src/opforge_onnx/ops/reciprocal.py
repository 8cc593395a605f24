"""Reciprocal: 1 / x."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    return [ctx.op("Divide", scalar_like(ctx, 1, x), x)]


EXTENSION = translator("Reciprocal", convert)
