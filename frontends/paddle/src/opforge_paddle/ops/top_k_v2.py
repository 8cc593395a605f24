"""top_k_v2 (X, K -> Out, Indices): the ``k`` largest (or smallest) values along ``axis``."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import norm_axis, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    axis = norm_axis(ctx, int(ctx.get_attribute("axis", -1)), rank(ctx, x, "input 'X'"))
    if ctx.has_input("K"):
        k = out(ctx.op("Convert", ctx.op("Squeeze", ctx.get_input("K")), destination_type=Type.i64))
    else:
        k = ctx.const(int(ctx.get_attribute("k", 1)), Type.i64)
    largest = bool(ctx.get_attribute("largest", True))
    node = ctx.op("TopK", x, k, axis=axis, mode="max" if largest else "min",
                  sort="value", index_element_type=Type.i64, stable=True)  # unsorted: any order will do
    return {"Out": node.output(0), "Indices": node.output(1)}


EXTENSION = translator("top_k_v2", convert)

PIR = PirOp("topk", "top_k_v2", (Arg("X"), Arg("K", attr="k", scalar=True)), ("Out", "Indices"))
