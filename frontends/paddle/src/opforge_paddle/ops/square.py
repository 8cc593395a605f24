"""square (X -> Out): x * x."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    return {"Out": out(ctx.op("Multiply", x, x))}


EXTENSION = translator("square", convert)

PIR = unary("square")
