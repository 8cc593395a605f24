"""pow (X -> Out) = x ** factor (attribute, or the ``FactorTensor`` input)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, scalar_like, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    if ctx.has_input("FactorTensor"):
        return {"Out": out(ctx.op("Power", x, ctx.get_input("FactorTensor")))}
    return {"Out": out(ctx.op("Power", x, scalar_like(ctx, float(ctx.get_attribute("factor", 1.0)), x)))}


EXTENSION = translator("pow", convert)

PIR = PirOp("pow", "pow", (Arg("X"),), ("Out",), {"y": "factor"})
