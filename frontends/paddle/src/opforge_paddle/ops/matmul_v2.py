"""matmul_v2 (X, Y -> Out; trans_x, trans_y) -> MatMul."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("MatMul", ctx.get_input("X"), ctx.get_input("Y"),
                              transpose_a=bool(ctx.get_attribute("trans_x", False)),
                              transpose_b=bool(ctx.get_attribute("trans_y", False))))}


EXTENSION = translator("matmul_v2", convert)

PIR = PirOp("matmul", "matmul_v2", (Arg("X"), Arg("Y")), ("Out",), {"transpose_x": "trans_x", "transpose_y": "trans_y"})
