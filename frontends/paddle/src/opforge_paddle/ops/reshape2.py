"""reshape2 (X -> Out, XShape): target from ``ShapeTensor`` (list of scalars), ``Shape``
(a tensor) or the ``shape`` attribute, in Paddle's priority order; 0 copies the input dim."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_paddle.ops._helpers import etype, i64, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def _target(ctx: NodeContext) -> Output:
    if ctx.get_input_size("ShapeTensor"):
        parts = [ctx.op("Reshape", ctx.get_input("ShapeTensor", i), i64(ctx, [1]), special_zero=False)
                 for i in range(ctx.get_input_size("ShapeTensor"))]
        parts = [p if etype(p) is Type.i64 else ctx.op("Convert", p, destination_type=Type.i64) for p in parts]
        return out(ctx.op("Concat", *parts, axis=0))
    if ctx.has_input("Shape"):
        s = ctx.get_input("Shape")
        return s if etype(s) is Type.i64 else out(ctx.op("Convert", s, destination_type=Type.i64))
    return i64(ctx, [int(d) for d in ctx.get_attribute("shape")])


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("Reshape", ctx.get_input("X"), _target(ctx), special_zero=True))}


EXTENSION = translator("reshape2", convert)

PIR = PirOp("reshape", "reshape2", (Arg("X"), Arg("Shape", attr="shape")), ("Out", "XShape"))
