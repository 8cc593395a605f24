"""concat (X: list -> Out) along ``axis`` (attribute, or the ``AxisTensor`` input)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import int_list, norm_axis, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    xs = [ctx.get_input("X", i) for i in range(ctx.get_input_size("X"))]
    if not xs:
        raise ctx.error("input 'X' is empty")
    axis = int_list(ctx, "axis", ("AxisTensor",), 0)[0]
    axis = norm_axis(ctx, axis, rank(ctx, xs[0], "input 'X'"))
    return {"Out": out(ctx.op("Concat", *xs, axis=axis))}


EXTENSION = translator("concat", convert)

PIR = PirOp("concat", "concat", (Arg("X"), Arg("AxisTensor", attr="axis", scalar=True)))
