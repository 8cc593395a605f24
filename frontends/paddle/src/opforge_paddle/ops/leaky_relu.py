"""leaky_relu (X -> Out): x if x > 0 else alpha * x."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, scalar_like, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    alpha = float(ctx.get_attribute("alpha", 0.02))
    neg = ctx.op("Multiply", x, scalar_like(ctx, alpha, x))
    positive = ctx.op("Greater", x, scalar_like(ctx, 0.0, x))
    return {"Out": out(ctx.op("Select", positive, x, neg))}


EXTENSION = translator("leaky_relu", convert)

PIR = (
    # PIR names the slope 'negative_slope'; the legacy op calls it 'alpha'
    PirOp("leaky_relu", "leaky_relu", (Arg("X"),), ("Out",), {"negative_slope": "alpha"})
)
