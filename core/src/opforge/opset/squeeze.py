"""Squeeze-1: remove dimensions of size 1 (the listed axes, or all of them when no axes are given).

Like OpenVINO, a listed axis whose dimension is statically not 1 is left in place, and an
empty axes list means "every dimension of size 1".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._shape_util import (
    check_integral,
    check_rank,
    const_ints,
    infer_errors,
    ints,
    normalize_axes,
)
from opforge.shape import PartialShape


def squeeze_shape(data: PartialShape, axes: Sequence[int] | None) -> PartialShape:
    if data.rank is None:
        return PartialShape.dynamic()
    if not axes:
        if any(d is None for d in data.dims):
            return PartialShape.dynamic()  # which dynamic dimensions are 1 is unknown
        return PartialShape([d for d in data.dims if d != 1])
    drop = set(normalize_axes(axes, data.rank, "axes"))
    # A dynamic dimension named in axes is taken to be 1, as OpenVINO does.
    return PartialShape([d for i, d in enumerate(data.dims) if not (i in drop and d in (1, None))])


class Squeeze(Op):
    type_name = "Squeeze"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1,)
    version = "opset1"
    min_inputs = 1
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = ctx.input_type(0)
        data = ctx.input_shape(0)
        if ctx.num_inputs == 1:
            return [TensorSpec(t, squeeze_shape(data, None))]
        check_integral(ctx, 1, "axes")
        check_rank(ctx, 1, "axes", (0, 1))
        axes = const_ints(ctx, 1)
        if axes is None:
            if data.rank is not None and all(d is not None and d != 1 for d in data.dims):
                return [TensorSpec(t, data)]  # nothing can be squeezed whatever the axes
            return [TensorSpec(t, PartialShape.dynamic())]
        with infer_errors(ctx):
            return [TensorSpec(t, squeeze_shape(data, axes))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        axes = ints(inputs[1]) if len(inputs) > 1 else None
        return [x.reshape(squeeze_shape(PartialShape(x.shape), axes).to_tuple())]
