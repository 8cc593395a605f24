"""meshgrid (X: list of 1-D -> Out: list): each input broadcast along its own axis of the
[len(x0), len(x1), ...] grid ("ij" indexing)."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    xs = [ctx.get_input("X", i) for i in range(ctx.get_input_size("X"))]
    n = len(xs)
    sizes = [ctx.op("Reshape", ctx.op("ShapeOf", x, output_type=Type.i64), i64(ctx, [1]), special_zero=False)
             for x in xs]
    grid = ctx.op("Concat", *sizes, axis=0)
    outs = []
    for i, x in enumerate(xs):
        shape = [1] * n
        shape[i] = -1
        col = ctx.op("Reshape", x, i64(ctx, shape), special_zero=False)
        outs.append(out(ctx.op("Broadcast", col, grid, mode="numpy")))
    return {"Out": outs}


EXTENSION = translator("meshgrid", convert)

PIR = PirOp("meshgrid", "meshgrid", (Arg("X"),))
