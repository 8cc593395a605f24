"""where (Condition, X, Y -> Out) -> Select."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("Select", ctx.get_input("Condition"), ctx.get_input("X"), ctx.get_input("Y")))}


EXTENSION = translator("where", convert)

PIR = PirOp("where", "where", (Arg("Condition"), Arg("X"), Arg("Y")))
