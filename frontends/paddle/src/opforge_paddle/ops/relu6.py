"""relu6 (X -> Out) -> Clamp(0, threshold)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("Clamp", ctx.get_input("X"), min=0.0,
                              max=float(ctx.get_attribute("threshold", 6.0))))}


EXTENSION = translator("relu6", convert)

PIR = unary("relu6", threshold=6.0)
