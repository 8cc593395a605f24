"""expand_as_v2 (X, Y -> Out): broadcast X to Y's shape (or the ``target_shape`` attribute)."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    if ctx.has_input("Y"):
        target = out(ctx.op("ShapeOf", ctx.get_input("Y"), output_type=Type.i64))
    else:
        target = i64(ctx, [int(d) for d in ctx.get_attribute("target_shape")])
    return {"Out": out(ctx.op("Broadcast", ctx.get_input("X"), target, mode="numpy"))}


EXTENSION = translator("expand_as_v2", convert)

PIR = PirOp("expand_as", "expand_as_v2", (Arg("X"), Arg("Y")))
