"""unstack (X -> Y: list): X split into its ``axis`` slices, that axis removed."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, norm_axis, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    axis = norm_axis(ctx, int(ctx.get_attribute("axis", 0)), rank(ctx, x, "input 'X'"))
    num = int(ctx.get_attribute("num", 0) or 0) or ctx.get_output_size("Y")
    if num == 0:
        d = x.partial_shape[axis]
        if d is None:
            raise ctx.error(f"unstacking along a dynamic axis {axis} needs 'num'")
        num = int(d)
    parts = ctx.op("Split", x, i64(ctx, axis), num_splits=num).outputs()
    return {"Y": [out(ctx.op("Squeeze", p, i64(ctx, [axis]))) for p in parts]}


EXTENSION = translator("unstack", convert)

PIR = PirOp("unstack", "unstack", (Arg("X"),), ("Y",))
