"""MatMul: the same op (numpy semantics, including 1-D operands)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("MatMul", ctx.get_input(0), ctx.get_input(1), transpose_a=False, transpose_b=False)]


EXTENSION = translator("MatMul", convert)
