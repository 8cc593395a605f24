"""transpose2 (X -> Out, XShape) with permutation ``axis``."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    perm = [int(a) for a in ctx.get_attribute("axis")]
    return {"Out": out(ctx.op("Transpose", ctx.get_input("X"), i64(ctx, perm)))}


EXTENSION = translator("transpose2", convert)

PIR = PirOp("transpose", "transpose2", (Arg("X"),), ("Out", "XShape"), {"perm": "axis"})
