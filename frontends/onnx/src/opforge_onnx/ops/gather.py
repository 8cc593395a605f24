"""Gather: Gather-8 (negative indices allowed), axis as a constant input."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    axis = int(ctx.get_attribute("axis", 0))
    return [ctx.op("Gather", ctx.get_input(0), ctx.get_input(1), i64(ctx, axis), batch_dims=0)]


EXTENSION = translator("Gather", convert)
