"""Gemm: alpha * A' B' + beta * C as MatMul (with its transpose flags), Multiply and Add."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    a, b = ctx.get_input(0), ctx.get_input(1)
    alpha = float(ctx.get_attribute("alpha", 1.0))
    beta = float(ctx.get_attribute("beta", 1.0))
    y = ctx.op("MatMul", a, b, transpose_a=bool(ctx.get_attribute("transA", 0)),
               transpose_b=bool(ctx.get_attribute("transB", 0)))
    if alpha != 1.0:
        y = ctx.op("Multiply", y, scalar_like(ctx, alpha, a))
    if ctx.has_input(2) and beta != 0.0:
        c = ctx.get_input(2)
        if beta != 1.0:
            c = ctx.op("Multiply", c, scalar_like(ctx, beta, c)).output(0)
        y = ctx.op("Add", y, c)
    return [y]


EXTENSION = translator("Gemm", convert)
