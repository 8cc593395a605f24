"""Transpose: perm defaults to reversing the axes."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, require_rank, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    perm = ctx.get_attribute("perm", None)
    if perm is None:
        perm = list(reversed(range(require_rank(ctx, x))))
    return [ctx.op("Transpose", x, i64(ctx, list(perm)))]


EXTENSION = translator("Transpose", convert)
