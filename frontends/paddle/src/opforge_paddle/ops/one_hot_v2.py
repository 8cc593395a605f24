"""one_hot_v2 (X, depth_tensor -> Out): one-hot rows of ``depth`` along a new last axis."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import dtype_attr, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    if ctx.has_input("depth_tensor"):
        depth = out(ctx.op("Convert", ctx.op("Squeeze", ctx.get_input("depth_tensor")), destination_type=Type.i64))
    else:
        depth = ctx.const(int(ctx.get_attribute("depth")), Type.i64)
    t = dtype_attr(ctx, "dtype", Type.f32)
    return {"Out": out(ctx.op("OneHot", ctx.get_input("X"), depth, ctx.const(1, t), ctx.const(0, t), axis=-1))}


EXTENSION = translator("one_hot_v2", convert)

PIR = PirOp("one_hot", "one_hot_v2", (Arg("X"), Arg("depth_tensor", attr="depth", scalar=True)))
