"""MatMulInteger: i32 MatMul of the zero-point-centred operands. A's zero point may be per row
(a vector of M values), B's per column (N values, which broadcast as they are)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator
from opforge_onnx.ops._integer import centered


def convert(ctx: NodeContext) -> ConversionResult:
    a = centered(ctx, ctx.get_input(0), ctx.get_input(2) if ctx.has_input(2) else None, 2)
    b = centered(ctx, ctx.get_input(1), ctx.get_input(3) if ctx.has_input(3) else None)
    return [ctx.op("MatMul", a, b)]


EXTENSION = translator("MatMulInteger", convert)
