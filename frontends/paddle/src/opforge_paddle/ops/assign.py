"""assign (X -> Out): the input itself."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": ctx.get_input("X")}


EXTENSION = translator("assign", convert)

PIR = unary("assign")
