"""Expand: Broadcast in bidirectional mode (the target shape may be smaller than the input)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("Broadcast", ctx.get_input(0), to_i64(ctx, ctx.get_input(1)), mode="bidirectional")]


EXTENSION = translator("Expand", convert)
