"""BitCast (opset 26): the element bits reinterpreted as ``to``, which has the same bit width."""

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
    return [ctx.op("BitCast", x, destination_type=to)]


EXTENSION = translator("BitCast", convert)
