"""Where: Select with numpy broadcasting."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("Select", ctx.get_input(0), ctx.get_input(1), ctx.get_input(2), auto_broadcast="numpy")]


EXTENSION = translator("Where", convert)
