"""ScatterND: ScatterNDUpdate; reductions (opset 16) are not supported by the opset-4 op."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    reduction = str(ctx.get_attribute("reduction", "none"))
    if reduction != "none":
        raise ctx.error(f"reduction '{reduction}' is not supported (ScatterNDUpdate-4 only replaces)")
    return [ctx.op("ScatterNDUpdate", ctx.get_input(0), ctx.get_input(1), ctx.get_input(2))]


EXTENSION = translator("ScatterND", convert)
