"""roll (X, ShiftsTensor -> Out): shift X circularly by ``shifts`` along ``axis`` (over the
flattened input when no axis is given) -> Roll."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, int_list, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    shifts = int_list(ctx, "shifts", ("ShiftsTensor",), [])
    axes = [int(a) for a in ctx.get_attribute("axis", []) or []]
    if axes:
        return {"Out": out(ctx.op("Roll", x, i64(ctx, shifts), i64(ctx, axes)))}
    flat = ctx.op("Reshape", x, i64(ctx, [-1]), special_zero=False)
    rolled = ctx.op("Roll", flat, i64(ctx, shifts), i64(ctx, [0] * len(shifts)))
    return {"Out": out(ctx.op("Reshape", rolled, ctx.op("ShapeOf", x, output_type=Type.i64), special_zero=False))}


EXTENSION = translator("roll", convert)

PIR = PirOp("roll", "roll", (Arg("X"), Arg("ShiftsTensor", attr="shifts")))
