"""masked_select (X, Mask -> Y): the elements of X where Mask is true, as a 1-D tensor
(NonZero coordinates, then GatherND)."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x, mask = ctx.get_input("X"), ctx.get_input("Mask")
    if x.partial_shape != mask.partial_shape:
        # both broadcast to the common shape first
        shape = ctx.op("ShapeOf", ctx.op("Add", ctx.op("Convert", mask, destination_type=x.element_type), x),
                       output_type=Type.i64)
        x = out(ctx.op("Broadcast", x, shape, mode="numpy"))
        mask = out(ctx.op("Broadcast", mask, shape, mode="numpy"))
    coords = ctx.op("Transpose", ctx.op("NonZero", mask, output_type=Type.i64), i64(ctx, [1, 0]))
    return {"Y": out(ctx.op("GatherND", x, coords, batch_dims=0))}


EXTENSION = translator("masked_select", convert)

PIR = PirOp("masked_select", "masked_select", (Arg("X"), Arg("Mask")), ("Y",))
