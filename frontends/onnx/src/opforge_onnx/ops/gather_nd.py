"""GatherND: GatherND-8 with batch_dims (opset 12)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("GatherND", ctx.get_input(0), ctx.get_input(1), batch_dims=int(ctx.get_attribute("batch_dims", 0)))]


EXTENSION = translator("GatherND", convert)
