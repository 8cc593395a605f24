"""unsqueeze2 (X -> Out, XShape): new unit dims at ``axes`` (attribute or ``AxesTensor``)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, int_list, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    axes = int_list(ctx, "axes", ("AxesTensor", "AxesTensorList"), [])
    return {"Out": out(ctx.op("Unsqueeze", ctx.get_input("X"), i64(ctx, axes)))}


EXTENSION = translator("unsqueeze2", convert)

PIR = PirOp("unsqueeze", "unsqueeze2", (Arg("X"), Arg("AxesTensor", attr="axes")), ("Out", "XShape"))
