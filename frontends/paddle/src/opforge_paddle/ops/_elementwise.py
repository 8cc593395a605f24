"""elementwise_* (X, Y -> Out) with Paddle's ``axis`` broadcasting.

``axis == -1`` (or equal ranks) is numpy broadcasting. Otherwise Y's dimensions line up with X's
starting at ``axis`` (a [C] bias against [N, C, H, W] with axis=1), so Y is unsqueezed to
[1]*axis + Y.shape + [1]*(rank(X) - axis - rank(Y)) first.
"""

from __future__ import annotations

from collections.abc import Callable

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_paddle.ops._helpers import i64, out, rank


def aligned_y(ctx: NodeContext) -> tuple[Output, Output]:
    x, y = ctx.get_input("X"), ctx.get_input("Y")
    axis = int(ctx.get_attribute("axis", -1))
    if axis == -1:
        return x, y
    rx, ry = rank(ctx, x, "input 'X'"), rank(ctx, y, "input 'Y'")
    if rx == ry:
        return x, y
    if axis < 0:
        axis += rx
    if not 0 <= axis <= rx - ry:
        raise ctx.error(f"axis={axis} does not place Y (rank {ry}) inside X (rank {rx})")
    new_axes = list(range(axis)) + list(range(axis + ry, rx))
    if not new_axes:
        return x, y
    return x, out(ctx.op("Unsqueeze", y, i64(ctx, new_axes)))


def elementwise(target: str, floor: bool = False) -> Callable[[NodeContext], ConversionResult]:
    def convert(ctx: NodeContext) -> ConversionResult:
        x, y = aligned_y(ctx)
        r = ctx.op(target, x, y)
        if floor:
            r = ctx.op("Floor", r) if x.element_type.is_float else r
        return {"Out": out(r)}
    convert.__name__ = convert.__qualname__ = f"convert_{target.lower()}"
    return convert
