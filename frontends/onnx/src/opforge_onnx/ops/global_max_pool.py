"""GlobalMaxPool: ReduceMax over the spatial axes, keeping them."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, require_rank, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    r = require_rank(ctx, x)
    return [ctx.op("ReduceMax", x, i64(ctx, list(range(2, r))), keep_dims=True)]


EXTENSION = translator("GlobalMaxPool", convert)
