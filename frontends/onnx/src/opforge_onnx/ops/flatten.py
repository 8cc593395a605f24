"""Flatten: Reshape to [prod(dims[:axis]), prod(dims[axis:])]."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, out, require_rank, shape_of, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    r = require_rank(ctx, x)
    axis = int(ctx.get_attribute("axis", 1))
    if axis < 0:
        axis += r
    if not 0 <= axis <= r:
        raise ctx.error(f"axis {axis} is out of range for rank {r}")
    ps = out(x).partial_shape
    if ps.is_static:
        dims = ps.to_tuple()
        first = 1
        for d in dims[:axis]:
            first *= d
        rest = 1
        for d in dims[axis:]:
            rest *= d
        return [ctx.op("Reshape", x, i64(ctx, [first, rest]), special_zero=False)]
    if axis == 0:
        return [ctx.op("Reshape", x, i64(ctx, [1, -1]), special_zero=False)]
    head = ctx.op("Slice", shape_of(ctx, x), i64(ctx, [0]), i64(ctx, [axis]), i64(ctx, [1]))
    first_port = ctx.op("ReduceProd", head, i64(ctx, [0]), keep_dims=True)
    target = ctx.op("Concat", first_port, i64(ctx, [-1]), axis=0)
    return [ctx.op("Reshape", x, target, special_zero=False)]


EXTENSION = translator("Flatten", convert)
