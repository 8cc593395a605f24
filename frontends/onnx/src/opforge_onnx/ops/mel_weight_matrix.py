"""MelWeightMatrix (opset 17): opforge's MelWeightMatrix op; ``output_datatype`` (default float)."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    out_type = ctx.get_attribute("output_datatype", Type.f32, dtype=Type)
    return [ctx.op("MelWeightMatrix", *[ctx.get_input(i) for i in range(5)], output_type=out_type)]


EXTENSION = translator("MelWeightMatrix", convert)
