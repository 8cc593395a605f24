"""stack (X: list -> Y): the inputs joined along a new ``axis``."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, norm_axis, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    xs = [ctx.get_input("X", i) for i in range(ctx.get_input_size("X"))]
    if not xs:
        raise ctx.error("input 'X' is empty")
    axis = norm_axis(ctx, int(ctx.get_attribute("axis", 0)), rank(ctx, xs[0], "input 'X'") + 1)
    parts = [ctx.op("Unsqueeze", x, i64(ctx, axis)) for x in xs]
    return {"Y": out(ctx.op("Concat", *parts, axis=axis))}


EXTENSION = translator("stack", convert)

PIR = PirOp("stack", "stack", (Arg("X"),), ("Y",))
