"""Gelu (opset 20): approximate "none" is the erf form, "tanh" the tanh form."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    mode = "TANH" if str(ctx.get_attribute("approximate", "none")) == "tanh" else "ERF"
    return [ctx.op("Gelu", ctx.get_input(0), approximation_mode=mode)]


EXTENSION = translator("Gelu", convert)
