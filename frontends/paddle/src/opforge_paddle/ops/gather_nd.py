"""gather_nd (X, Index -> Out) -> GatherND."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("GatherND", ctx.get_input("X"), ctx.get_input("Index"), batch_dims=0))}


EXTENSION = translator("gather_nd", convert)

PIR = PirOp("gather_nd", "gather_nd", (Arg("X"), Arg("Index")))
