"""assign (X -> Out): the input itself."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.lowering import unary
from opforge_paddle.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": ctx.get_input("X")}


EXTENSION = translator("assign", convert)

PIR = unary("assign")
