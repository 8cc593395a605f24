"""SpaceToDepth: ONNX's default layout (``mode="DCR"``) is blocks_first; ``CRD`` (opset 25) is
depth_first."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    mode = str(ctx.get_attribute("mode", "DCR"))
    if mode not in ("DCR", "CRD"):
        raise ctx.error(f"mode '{mode}' must be DCR or CRD")
    return [ctx.op("SpaceToDepth", ctx.get_input(0), block_size=int(ctx.get_attribute("blocksize")),
                   mode="blocks_first" if mode == "DCR" else "depth_first")]


EXTENSION = translator("SpaceToDepth", convert)
