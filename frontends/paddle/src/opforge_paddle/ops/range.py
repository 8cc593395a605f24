"""range (Start, End, Step -> Out): [start, end) by step -> Range; PIR's arange."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_paddle.ops._helpers import etype, i64, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp
from opforge_paddle.program import DTYPE_NAMES, VARTYPE_TO_TYPE


def convert(ctx: NodeContext) -> ConversionResult:
    d = ctx.get_attribute("dtype", None)
    t = None if d is None else DTYPE_NAMES.get(d) if isinstance(d, str) else VARTYPE_TO_TYPE.get(int(d))
    t = t or etype(ctx.get_input("Start"))

    def scalar(port: str) -> Output:
        v = ctx.get_input(port)
        v = out(ctx.op("Reshape", v, i64(ctx, []), special_zero=False))
        return v if etype(v) is t else out(ctx.op("Convert", v, destination_type=t))

    return {"Out": out(ctx.op("Range", scalar("Start"), scalar("End"), scalar("Step"), output_type=t))}


EXTENSION = translator("range", convert)

PIR = PirOp("arange", "range", (Arg("Start"), Arg("End"), Arg("Step")))
