"""shape64 (Input -> Out), PIR's int64 shape op."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("ShapeOf", ctx.get_input("Input"), output_type=Type.i64))}


EXTENSION = translator("shape64", convert)

PIR = PirOp("shape64", "shape64", (Arg("Input"),))
