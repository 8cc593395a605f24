"""TopK: TopK-11 (stable: ties keep the lower index, as ONNX requires); k is an attribute
before opset 10."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    if (ctx.get_opset_version() or 10) < 10:
        k = i64(ctx, int(ctx.get_attribute("k")))
    else:
        k = ctx.op("Squeeze", to_i64(ctx, ctx.get_input(1))).output(0)
    largest = bool(ctx.get_attribute("largest", 1))
    node = ctx.op("TopK", x, k, axis=int(ctx.get_attribute("axis", -1)), mode="max" if largest else "min",
                  sort="value", index_element_type=Type.i64, stable=True)
    return [node.output(0), node.output(1)]


EXTENSION = translator("TopK", convert)
