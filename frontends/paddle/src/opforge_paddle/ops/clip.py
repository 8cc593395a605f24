"""clip (X -> Out) to [min, max] (attributes, or the ``Min``/``Max`` inputs when constant)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import const_input, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def _bound(ctx: NodeContext, attr: str, port: str, default: float) -> float:
    if ctx.get_input_size(port):
        value = const_input(ctx, port)
        if value is None:
            raise ctx.error(f"input '{port}' must be a constant while converting")
        return float(value[0])
    return float(ctx.get_attribute(attr, default))


def convert(ctx: NodeContext) -> ConversionResult:
    lo = _bound(ctx, "min", "Min", float("-inf"))
    hi = _bound(ctx, "max", "Max", float("inf"))
    return {"Out": out(ctx.op("Clamp", ctx.get_input("X"), min=lo, max=hi))}


EXTENSION = translator("clip", convert)

PIR = PirOp("clip", "clip", (Arg("X"), Arg("Min", attr="min", scalar=True), Arg("Max", attr="max", scalar=True)))
