"""Pow: Power; ONNX allows an exponent of another element type, opforge wants one type."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x, y = ctx.get_input(0), ctx.get_input(1)
    if etype(y) != etype(x):
        y = ctx.op("Convert", y, destination_type=etype(x)).output(0)
    return [ctx.op("Power", x, y)]


EXTENSION = translator("Pow", convert)
