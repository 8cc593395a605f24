"""IsInf: the same op with its two detect flags."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("IsInf", ctx.get_input(0),
                   detect_negative=bool(ctx.get_attribute("detect_negative", 1)),
                   detect_positive=bool(ctx.get_attribute("detect_positive", 1)))]


EXTENSION = translator("IsInf", convert)
