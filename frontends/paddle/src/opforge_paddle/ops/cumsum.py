"""cumsum (X -> Out) along ``axis`` (over the flattened input with ``flatten``), optionally
``exclusive`` and ``reverse`` -> CumSum."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, int_list, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    axis = int_list(ctx, "axis", ("AxisTensor",), [-1])[0]
    if bool(ctx.get_attribute("flatten", False)):
        x = out(ctx.op("Reshape", x, i64(ctx, [-1]), special_zero=False))
        axis = 0
    return {"Out": out(ctx.op("CumSum", x, i64(ctx, axis), exclusive=bool(ctx.get_attribute("exclusive", False)),
                              reverse=bool(ctx.get_attribute("reverse", False))))}


EXTENSION = translator("cumsum", convert)

PIR = PirOp("cumsum", "cumsum", (Arg("X"), Arg("AxisTensor", attr="axis", scalar=True)))
