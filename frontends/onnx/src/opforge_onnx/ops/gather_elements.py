"""GatherElements: the same op."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("GatherElements", ctx.get_input(0), ctx.get_input(1), axis=int(ctx.get_attribute("axis", 0)))]


EXTENSION = translator("GatherElements", convert)
