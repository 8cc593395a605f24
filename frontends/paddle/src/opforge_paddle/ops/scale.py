"""scale (X -> Out): ``scale * x + bias`` (bias_after_scale) or ``scale * (x + bias)``."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_paddle.ops._helpers import etype, out, scalar_like, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    scale: Output
    if ctx.has_input("ScaleTensor"):
        scale = ctx.get_input("ScaleTensor")
        if etype(scale) != etype(x):
            scale = out(ctx.op("Convert", scale, destination_type=etype(x)))
    else:
        scale = scalar_like(ctx, float(ctx.get_attribute("scale", 1.0)), x)
    bias = float(ctx.get_attribute("bias", 0.0))
    b = scalar_like(ctx, bias, x)
    if bool(ctx.get_attribute("bias_after_scale", True)):
        r = ctx.op("Multiply", x, scale)
        return {"Out": out(ctx.op("Add", r, b) if bias else r)}
    return {"Out": out(ctx.op("Multiply", ctx.op("Add", x, b) if bias else x, scale))}


EXTENSION = translator("scale", convert)

PIR = PirOp("scale", "scale", (Arg("X"), Arg("ScaleTensor", attr="scale", scalar=True)))
