"""Concat: same op, same axis."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    ins = [i for i in ctx.get_inputs() if i is not None]
    return [ctx.op("Concat", *ins, axis=int(ctx.get_attribute("axis", 1 if (ctx.get_opset_version() or 4) < 4 else 0)))]


EXTENSION = translator("Concat", convert)
