"""index_select (X, Index -> Out): the ``dim`` slices of X at Index -> Gather."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    axis = int(ctx.get_attribute("dim", 0))
    return {"Out": out(ctx.op("Gather", ctx.get_input("X"), ctx.get_input("Index"), i64(ctx, axis)))}


EXTENSION = translator("index_select", convert)

PIR = PirOp("index_select", "index_select", (Arg("X"), Arg("Index")), ("Out",), {"axis": "dim"})
