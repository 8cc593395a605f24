"""elu (X -> Out) -> Elu(alpha)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("Elu", ctx.get_input("X"), alpha=float(ctx.get_attribute("alpha", 1.0))))}


EXTENSION = translator("elu", convert)

PIR = unary("elu")
