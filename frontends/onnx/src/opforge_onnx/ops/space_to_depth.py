"""SpaceToDepth: ONNX's layout is blocks_first."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("SpaceToDepth", ctx.get_input(0), block_size=int(ctx.get_attribute("blocksize")),
                   mode="blocks_first")]


EXTENSION = translator("SpaceToDepth", convert)
