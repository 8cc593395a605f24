"""cast (X -> Out) to ``out_dtype``."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import dtype_attr, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("Convert", ctx.get_input("X"), destination_type=dtype_attr(ctx, "out_dtype")))}


EXTENSION = translator("cast", convert)

PIR = PirOp("cast", "cast", (Arg("X"),), ("Out",), {"dtype": "out_dtype"})
