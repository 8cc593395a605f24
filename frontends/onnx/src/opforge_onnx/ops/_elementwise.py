"""Translators of element-wise ONNX ops that map one-to-one onto an opforge op with no attributes
to translate; each op's module is one line built from these."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def unary(onnx_op: str, target: str) -> ConversionExtension:
    """y = target(x)."""
    def convert(ctx: NodeContext) -> ConversionResult:
        return [ctx.op(target, ctx.get_input(0))]
    convert.__qualname__ = f"convert_{onnx_op}"
    return translator(onnx_op, convert)


def binary(onnx_op: str, target: str) -> ConversionExtension:
    """z = target(x, y), NumPy broadcasting (the opforge ops' default)."""
    def convert(ctx: NodeContext) -> ConversionResult:
        return [ctx.op(target, ctx.get_input(0), ctx.get_input(1))]
    convert.__qualname__ = f"convert_{onnx_op}"
    return translator(onnx_op, convert)
