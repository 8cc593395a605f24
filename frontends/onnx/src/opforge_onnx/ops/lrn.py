"""LRN: LRN over the channel axis; ONNX's alpha is already divided by size in the formula the
same way as opforge's."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("LRN", ctx.get_input(0), i64(ctx, [1]), alpha=float(ctx.get_attribute("alpha", 1e-4)),
                   beta=float(ctx.get_attribute("beta", 0.75)), bias=float(ctx.get_attribute("bias", 1.0)),
                   size=int(ctx.get_attribute("size")))]


EXTENSION = translator("LRN", convert)
