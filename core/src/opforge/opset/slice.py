"""Slice-8: ``data[start:stop:step]`` along the given axes, with NumPy clamping of start/stop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    const_ints,
    infer_errors,
    ints,
    normalize_axes,
    slice_length,
    vector_inputs_length,
)
from opforge.shape import Dim, PartialShape

_NAMES = ("start", "stop", "step", "axes")


def slice_plan(
    rank: int, start: Sequence[int], stop: Sequence[int], step: Sequence[int], axes: Sequence[int] | None
) -> dict[int, slice]:
    """The slice applied to each sliced axis."""
    if not len(start) == len(stop) == len(step) or (axes is not None and len(axes) != len(start)):
        raise ShapeError(
            f"start, stop, step{' and axes' if axes is not None else ''} must have the same length, got "
            f"{len(start)}, {len(stop)}, {len(step)}{f', {len(axes)}' if axes is not None else ''}"
        )
    if axes is None:
        if len(start) > rank:
            raise ShapeError(f"start has {len(start)} values but the data has rank {rank}")
        axes = range(len(start))
    norm = normalize_axes(axes, rank, "axes", unique=True)
    plan: dict[int, slice] = {}
    for ax, b, e, s in zip(norm, start, stop, step):
        if s == 0:
            raise ShapeError(f"step must not be 0 (axis {ax})")
        plan[ax] = slice(b, e, s)
    return plan


class Slice(Op):
    type_name = "Slice"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1, 2, 3, 4)
    version = "opset8"
    min_inputs = 4
    max_inputs = 5

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        length = vector_inputs_length(ctx, _NAMES)
        t = ctx.input_type(0)
        data = ctx.input_shape(0)
        if data.rank is None:
            return [TensorSpec(t, PartialShape.dynamic())]
        vals = [const_ints(ctx, i) for i in range(1, 4)]
        step = vals[2]
        if step is not None and 0 in step:
            raise ctx.error(f"step must not contain 0, got {step}")
        axes = const_ints(ctx, 4) if ctx.num_inputs > 4 else None
        if ctx.num_inputs > 4 and axes is None:
            return [TensorSpec(t, PartialShape.dynamic(data.rank))]  # any axis may be sliced
        dims: list[Dim] = list(data.dims)
        with infer_errors(ctx):
            if vals[0] is None or vals[1] is None or step is None:
                if axes is None and length is None:
                    return [TensorSpec(t, PartialShape.dynamic(data.rank))]
                sliced = normalize_axes(
                    axes if axes is not None else range(length or 0), data.rank, "axes", unique=True
                )
                for ax in sliced:
                    dims[ax] = None
                return [TensorSpec(t, PartialShape(dims))]
            plan = slice_plan(data.rank, vals[0], vals[1], step, axes)
        for ax, sl in plan.items():
            d = dims[ax]
            dims[ax] = None if d is None else slice_length(sl.start, sl.stop, sl.step or 1, d)
        return [TensorSpec(t, PartialShape(dims))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        axes = ints(inputs[4]) if len(inputs) > 4 else None
        plan = slice_plan(x.ndim, ints(inputs[1]), ints(inputs[2]), ints(inputs[3]), axes)
        index = tuple(plan.get(ax, slice(None)) for ax in range(x.ndim))
        return [x[index]]
