"""square (X -> Out): x * x."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.lowering import unary
from opforge_paddle.ops._helpers import out, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    return {"Out": out(ctx.op("Multiply", x, x))}


EXTENSION = translator("square", convert)

PIR = unary("square")
