"""bmm (X, Y -> Out): batched MatMul."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("MatMul", ctx.get_input("X"), ctx.get_input("Y")))}


EXTENSION = translator("bmm", convert)

PIR = PirOp("bmm", "bmm", (Arg("X"), Arg("Y")))
