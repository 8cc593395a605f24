"""where_index (Condition -> Out): the [n, rank] int64 coordinates of the non-zero elements
(PIR's nonzero) -> NonZero, transposed."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    nz = ctx.op("NonZero", ctx.get_input("Condition"), output_type=Type.i64)
    return {"Out": out(ctx.op("Transpose", nz, i64(ctx, [1, 0])))}


EXTENSION = translator("where_index", convert)

PIR = PirOp("nonzero", "where_index", (Arg("Condition"),))
