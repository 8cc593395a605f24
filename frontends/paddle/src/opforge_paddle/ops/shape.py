"""shape (Input -> Out): the input's shape as int32 (``shape``) or int64 (PIR ``shape64``)."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.lowering import Arg, PirOp
from opforge_paddle.ops._helpers import out, translator


def shape32(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("ShapeOf", ctx.get_input("Input"), output_type=Type.i32))}


def shape64(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("ShapeOf", ctx.get_input("Input"), output_type=Type.i64))}


SHAPE = translator("shape", shape32)
SHAPE64 = translator("shape64", shape64)

PIR = [PirOp("shape", "shape", (Arg("Input"),)), PirOp("shape64", "shape64", (Arg("Input"),))]
