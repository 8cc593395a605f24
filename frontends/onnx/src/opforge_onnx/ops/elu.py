"""Elu: the same op."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("Elu", ctx.get_input(0), alpha=float(ctx.get_attribute("alpha", 1.0)))]


EXTENSION = translator("Elu", convert)
