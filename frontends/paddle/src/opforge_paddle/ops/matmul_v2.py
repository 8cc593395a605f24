"""matmul_v2 (X, Y -> Out; trans_x, trans_y) -> MatMul; legacy matmul (v1) also scales by alpha."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.lowering import Arg, PirOp
from opforge_paddle.ops._helpers import out, scalar_like, translator


def matmul_v2(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("MatMul", ctx.get_input("X"), ctx.get_input("Y"),
                              transpose_a=bool(ctx.get_attribute("trans_x", False)),
                              transpose_b=bool(ctx.get_attribute("trans_y", False))))}


def matmul_v1(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    r = ctx.op("MatMul", x, ctx.get_input("Y"), transpose_a=bool(ctx.get_attribute("transpose_X", False)),
               transpose_b=bool(ctx.get_attribute("transpose_Y", False)))
    alpha = float(ctx.get_attribute("alpha", 1.0))
    if alpha != 1.0:
        r = ctx.op("Multiply", r, scalar_like(ctx, alpha, x))
    return {"Out": out(r)}


def bmm(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("MatMul", ctx.get_input("X"), ctx.get_input("Y")))}


MATMUL_V2 = translator("matmul_v2", matmul_v2)
MATMUL = translator("matmul", matmul_v1)
BMM = translator("bmm", bmm)

PIR = [
    PirOp("matmul", "matmul_v2", (Arg("X"), Arg("Y")), ("Out",), {"transpose_x": "trans_x", "transpose_y": "trans_y"}),
    PirOp("bmm", "bmm", (Arg("X"), Arg("Y"))),
]
