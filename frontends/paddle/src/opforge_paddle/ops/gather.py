"""gather (X, Index -> Out) along ``axis`` (attribute, or the ``Axis`` input)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, int_list, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    axis = int_list(ctx, "axis", ("Axis",), 0)[0]
    return {"Out": out(ctx.op("Gather", ctx.get_input("X"), ctx.get_input("Index"), i64(ctx, axis)))}


EXTENSION = translator("gather", convert)

PIR = PirOp("gather", "gather", (Arg("X"), Arg("Index"), Arg("Axis", attr="axis", scalar=True)))
