"""CastLike: Convert to the element type of the second input."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x, like = ctx.get_input(0), ctx.get_input(1)
    if etype(x) == etype(like):
        return [x]
    return [ctx.op("Convert", x, destination_type=etype(like))]


EXTENSION = translator("CastLike", convert)
