"""CumSum: the same op with exclusive/reverse."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("CumSum", ctx.get_input(0), ctx.get_input(1),
                   exclusive=bool(ctx.get_attribute("exclusive", 0)),
                   reverse=bool(ctx.get_attribute("reverse", 0)))]


EXTENSION = translator("CumSum", convert)
