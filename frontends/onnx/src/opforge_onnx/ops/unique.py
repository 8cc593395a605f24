"""Unique: Unique-10 with i64 indices and counts; the outputs are in the same order."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    axis = ctx.get_attribute("axis", None)
    axis_in = i64(ctx, int(axis)) if axis is not None else None
    node = ctx.op("Unique", x, axis_in, sorted=bool(int(ctx.get_attribute("sorted", 1))),
                  index_element_type=Type.i64, count_element_type=Type.i64)
    return list(node.outputs())


EXTENSION = translator("Unique", convert)
