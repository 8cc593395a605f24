"""split (X -> Out: list) into ``num`` equal parts or ``sections`` (one may be -1) along ``axis``."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, int_list, norm_axis, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    axis = norm_axis(ctx, int_list(ctx, "axis", ("AxisTensor",), 0)[0], rank(ctx, x, "input 'X'"))
    sections = int_list(ctx, "sections", ("SectionsTensorList",), [])
    num = int(ctx.get_attribute("num", 0))
    n_out = ctx.get_output_size("Out")
    if sections:
        node = ctx.op("VariadicSplit", x, i64(ctx, axis), i64(ctx, sections))
    else:
        node = ctx.op("Split", x, i64(ctx, axis), num_splits=num or n_out)
    return {"Out": node.outputs()}


EXTENSION = translator("split", convert)

PIR = [
    PirOp("split", "split", (Arg("X"), Arg("SectionsTensorList", attr="sections"),
                             Arg("AxisTensor", attr="axis", scalar=True))),
    PirOp("split_with_num", "split", (Arg("X"), Arg("AxisTensor", attr="axis", scalar=True))),
]
