"""Tile-1: repeat a tensor ``repeats[i]`` times along each axis (the shorter of the data rank
and the repeats length is padded with leading 1s)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._shape_util import ShapeError, check_integral, check_rank, const_ints, infer_errors, ints
from opforge.shape import Dim, PartialShape


def tile_shape(data: PartialShape, repeats: Sequence[int]) -> PartialShape:
    if any(r < 0 for r in repeats):
        raise ShapeError(f"repeats {list(repeats)} must not be negative")
    if data.rank is None:
        return PartialShape.dynamic()
    n = max(data.rank, len(repeats))
    dims: list[Dim] = [*([1] * (n - data.rank)), *data.dims]
    reps = [1] * (n - len(repeats)) + list(repeats)
    return PartialShape([0 if r == 0 else None if d is None else d * r for d, r in zip(dims, reps)])


class Tile(Op):
    type_name = "Tile"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1,)
    version = "opset1"
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_integral(ctx, 1, "repeats")
        check_rank(ctx, 1, "repeats", (1,))
        t = ctx.input_type(0)
        data = ctx.input_shape(0)
        repeats = const_ints(ctx, 1)
        if repeats is None:
            rs = ctx.input_shape(1)
            n = None if rs.rank is None else rs.dims[0]
            if data.rank is None or n is None:
                return [TensorSpec(t, PartialShape.dynamic())]
            return [TensorSpec(t, PartialShape.dynamic(max(n, data.rank)))]
        with infer_errors(ctx):
            return [TensorSpec(t, tile_shape(data, repeats))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, repeats_v = inputs
        repeats = ints(repeats_v)
        tile_shape(PartialShape(x.shape), repeats)
        return [np.tile(x, repeats) if repeats else x.copy()]
