"""hard_sigmoid (X -> Out): clip(x * slope + offset, 0, 1)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, scalar_like, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    slope = float(ctx.get_attribute("slope", 0.2))
    offset = float(ctx.get_attribute("offset", 0.5))
    # HSigmoid is the slope = 1/6 case, but paddle stores 1/6 rounded to f32: keep the arithmetic
    lin = ctx.op("Add", ctx.op("Multiply", x, scalar_like(ctx, slope, x)), scalar_like(ctx, offset, x))
    return {"Out": out(ctx.op("Clamp", lin, min=0.0, max=1.0))}


EXTENSION = translator("hard_sigmoid", convert)

PIR = unary("hardsigmoid", "hard_sigmoid")
