"""squeeze2 (X -> Out, XShape) over ``axes`` (attribute or ``AxesTensor``); Paddle skips listed
axes whose size is not 1."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, int_list, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    axes = int_list(ctx, "axes", ("AxesTensor", "AxesTensorList"), [])
    if not axes:
        return {"Out": out(ctx.op("Squeeze", x))}
    shape = x.partial_shape
    r = rank(ctx, x, "input 'X'")
    # Paddle ignores listed axes whose size is not 1; opforge's Squeeze would reject them.
    keep = [a for a in axes if shape[a % r] == 1]
    if not keep:
        return {"Out": x}
    return {"Out": out(ctx.op("Squeeze", x, i64(ctx, keep)))}


EXTENSION = translator("squeeze2", convert)

PIR = PirOp("squeeze", "squeeze2", (Arg("X"), Arg("AxesTensor", attr="axes")), ("Out", "XShape"))
