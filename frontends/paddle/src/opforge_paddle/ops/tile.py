"""tile (X, RepeatTimes, repeat_times_tensor -> Out): repeat X ``repeat_times`` along each axis."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.ops._shape_arg import int_vector
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    repeats = int_vector(ctx, "repeat_times", "RepeatTimes", "repeat_times_tensor")
    return {"Out": out(ctx.op("Tile", ctx.get_input("X"), repeats))}


EXTENSION = translator("tile", convert)

PIR = PirOp("tile", "tile", (Arg("X"), Arg("RepeatTimes", attr="repeat_times")))
