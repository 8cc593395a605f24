"""Div: Divide; ONNX integer division truncates toward zero (not Python's floor)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("Divide", ctx.get_input(0), ctx.get_input(1), m_pythondiv=False)]


EXTENSION = translator("Div", convert)
