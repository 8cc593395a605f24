"""Tile: the same op."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("Tile", ctx.get_input(0), to_i64(ctx, ctx.get_input(1)))]


EXTENSION = translator("Tile", convert)
