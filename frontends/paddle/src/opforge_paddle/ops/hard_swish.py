"""hard_swish (X -> Out): x * min(max(x + offset, 0), threshold) / scale; HSwish for the defaults."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, scalar_like, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    threshold = float(ctx.get_attribute("threshold", 6.0))
    scale = float(ctx.get_attribute("scale", 6.0))
    offset = float(ctx.get_attribute("offset", 3.0))
    if (threshold, scale, offset) == (6.0, 6.0, 3.0):
        return {"Out": out(ctx.op("HSwish", x))}
    gate = ctx.op("Clamp", ctx.op("Add", x, scalar_like(ctx, offset, x)), min=0.0, max=threshold)
    return {"Out": out(ctx.op("Divide", ctx.op("Multiply", x, gate), scalar_like(ctx, scale, x)))}


EXTENSION = translator("hard_swish", convert)

PIR = unary("hardswish", "hard_swish")
