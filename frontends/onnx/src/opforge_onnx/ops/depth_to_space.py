"""DepthToSpace: mode DCR is blocks_first, CRD depth_first."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    mode = "depth_first" if str(ctx.get_attribute("mode", "DCR")) == "CRD" else "blocks_first"
    return [ctx.op("DepthToSpace", ctx.get_input(0), block_size=int(ctx.get_attribute("blocksize")), mode=mode)]


EXTENSION = translator("DepthToSpace", convert)
