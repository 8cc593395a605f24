"""Cast: Convert to the ONNX element type ``to``."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    to = ctx.get_attribute("to", dtype=Type)
    if etype(x) == to:
        return [x]
    return [ctx.op("Convert", x, destination_type=to)]


EXTENSION = translator("Cast", convert)
