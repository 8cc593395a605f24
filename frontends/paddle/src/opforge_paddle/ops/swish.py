"""swish (X -> Out): x * sigmoid(beta * x) -> Swish."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, scalar_like, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    beta = float(ctx.get_attribute("beta", 1.0))
    if beta == 1.0:
        return {"Out": out(ctx.op("Swish", x))}
    return {"Out": out(ctx.op("Swish", x, scalar_like(ctx, beta, x)))}


EXTENSION = translator("swish", convert)

PIR = unary("swish", beta=1.0)
