"""Shared conversion of Sum, Max, Min and Mean of any number of inputs (with broadcasting):
pairwise folds. Each op has its own module."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import fold_binary, scalar_like, translator

_OPS = {"Sum": "Add", "Max": "Maximum", "Min": "Minimum", "Mean": "Add"}


def make(kind: str) -> ConversionExtension:
    def convert(ctx: NodeContext) -> ConversionResult:
        ins = [i for i in ctx.get_inputs() if i is not None]
        if not ins:
            raise ctx.error("needs at least one input")
        acc = fold_binary(ctx, _OPS[kind], ins)
        if kind == "Mean" and len(ins) > 1:
            return [ctx.op("Divide", acc, scalar_like(ctx, len(ins), acc), m_pythondiv=False)]
        return [acc]
    convert.__qualname__ = f"convert_{kind}"
    return translator(kind, convert)
