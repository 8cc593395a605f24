"""Unsqueeze-1: insert dimensions of size 1 at the given axes (of the output)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    check_integral,
    check_rank,
    const_ints,
    infer_errors,
    ints,
    normalize_axes,
)
from opforge.shape import Dim, PartialShape


def unsqueeze_shape(data: PartialShape, axes: Sequence[int]) -> PartialShape:
    if not axes:
        raise ShapeError("axes must not be empty")
    if data.rank is None:
        return PartialShape.dynamic()
    # Axes refer to the output, whose rank counts every listed axis; repeated axes insert one
    # dimension, as in OpenVINO.
    positions = sorted(set(normalize_axes(axes, data.rank + len(axes), "axes")))
    out: list[Dim] = list(data.dims)
    for p in positions:
        if p > len(out):
            raise ShapeError(
                f"axes {list(axes)} leave a gap in the output of rank {data.rank + len(positions)}"
            )
        out.insert(p, 1)
    return PartialShape(out)


class Unsqueeze(Op):
    type_name = "Unsqueeze"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1,)
    version = "opset1"
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_integral(ctx, 1, "axes")
        check_rank(ctx, 1, "axes", (0, 1))
        t = ctx.input_type(0)
        axes = const_ints(ctx, 1)
        if axes is None:
            return [TensorSpec(t, PartialShape.dynamic())]
        with infer_errors(ctx):
            return [TensorSpec(t, unsqueeze_shape(ctx.input_shape(0), axes))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, axes = inputs
        return [x.reshape(unsqueeze_shape(PartialShape(x.shape), ints(axes)).to_tuple())]
