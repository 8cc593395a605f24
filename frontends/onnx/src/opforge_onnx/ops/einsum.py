"""Einsum: the same op and equation."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    ins = [i for i in ctx.get_inputs() if i is not None]
    return [ctx.op("Einsum", *ins, equation=str(ctx.get_attribute("equation")).replace(" ", ""))]


EXTENSION = translator("Einsum", convert)
