"""Split-1: cut a tensor into ``num_splits`` equal parts along an axis."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    check_integral,
    check_rank,
    const_ints,
    infer_errors,
    normalize_axis,
    scalar_int,
)
from opforge.shape import PartialShape


class SplitAttrs(OpAttrs):
    num_splits: int = Field(gt=0)


class Split(Op):
    type_name = "Split"
    cost_class = CostClass.MOVEMENT
    value_inputs = (1,)
    version = "opset1"
    Attrs = SplitAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: SplitAttrs = ctx.attrs  # type: ignore[assignment]
        check_integral(ctx, 1, "axis")
        check_rank(ctx, 1, "axis", (0,))
        t = ctx.input_type(0)
        data = ctx.input_shape(0)
        n = a.num_splits
        axis_v = const_ints(ctx, 1)
        if data.rank is None:
            return [TensorSpec(t, PartialShape.dynamic())] * n
        if axis_v is None:
            return [TensorSpec(t, PartialShape.dynamic(data.rank))] * n
        with infer_errors(ctx):
            axis = normalize_axis(axis_v[0], data.rank)
            d = data.dims[axis]
            if d is not None and d % n:
                raise ShapeError(
                    f"dimension {axis} of the input {data} ({d}) is not divisible by num_splits {n}"
                )
        dims = list(data.dims)
        dims[axis] = None if d is None else d // n
        return [TensorSpec(t, PartialShape(dims))] * n

    @classmethod
    def evaluate(cls, attrs: SplitAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, axis_v = inputs
        axis = normalize_axis(scalar_int(axis_v, "axis"), x.ndim)
        if x.shape[axis] % attrs.num_splits:
            raise ShapeError(
                f"dimension {axis} of the input ({x.shape[axis]}) is not divisible by "
                f"num_splits {attrs.num_splits}"
            )
        return list(np.split(x, attrs.num_splits, axis=axis))
