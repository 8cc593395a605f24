"""shape (Input -> Out): the input's shape as int32."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("ShapeOf", ctx.get_input("Input"), output_type=Type.i32))}


EXTENSION = translator("shape", convert)

PIR = PirOp("shape", "shape", (Arg("Input"),))
