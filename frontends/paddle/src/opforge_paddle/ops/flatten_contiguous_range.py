"""flatten_contiguous_range (X -> Out, XShape): merge dims start_axis..stop_axis into one."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, norm_axis, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    r = rank(ctx, x, "input 'X'")
    if r == 0:
        return {"Out": out(ctx.op("Reshape", x, i64(ctx, [1]), special_zero=False))}
    start = norm_axis(ctx, int(ctx.get_attribute("start_axis", 1)), r)
    stop = norm_axis(ctx, int(ctx.get_attribute("stop_axis", -1)), r)
    # Leading zeros copy the kept dims (special_zero copies the dim at the *same* position, so it
    # cannot serve the trailing ones); -1 takes the product of the merged dims.
    tail = x.partial_shape.dims[stop + 1:]
    if all(d is not None for d in tail):
        target = i64(ctx, [0] * start + [-1] + [int(d) for d in tail])  # type: ignore[arg-type]
    else:
        shape = ctx.op("ShapeOf", x, output_type=Type.i64)
        trailing = ctx.op("Slice", shape, i64(ctx, [stop + 1]), i64(ctx, [r]), i64(ctx, [1]))
        target = out(ctx.op("Concat", i64(ctx, [0] * start + [-1]), trailing, axis=0))
    return {"Out": out(ctx.op("Reshape", x, target, special_zero=True))}


EXTENSION = translator("flatten_contiguous_range", convert)

PIR = PirOp("flatten", "flatten_contiguous_range", (Arg("X"),), ("Out", "XShape"))
