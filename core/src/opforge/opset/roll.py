"""Roll-7: shift elements cyclically along axes (a scalar shift applies to every axis; shifts
of a repeated axis add up)."""

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
    vector_length,
)


def roll_plan(
    shift: Sequence[int], axes: Sequence[int], shift_is_scalar: bool, rank: int
) -> tuple[list[int], list[int]]:
    norm = normalize_axes(axes, rank, "axes")
    if shift_is_scalar:
        return [shift[0]] * len(norm), norm
    if len(shift) != len(norm):
        raise ShapeError(f"shift {list(shift)} and axes {list(axes)} must have the same length")
    return list(shift), norm


class Roll(Op):
    type_name = "Roll"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1, 2)
    version = "opset7"
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_integral(ctx, 1, "shift")
        check_integral(ctx, 2, "axes")
        check_rank(ctx, 1, "shift", (0, 1))
        check_rank(ctx, 2, "axes", (0, 1))
        data = ctx.input_shape(0)
        if ctx.input_shape(1).rank == 1:
            ns, na = vector_length(ctx.input_shape(1)), vector_length(ctx.input_shape(2))
            if ns is not None and na is not None and ns != na:
                raise ctx.error(f"shift ({ns} values) and axes ({na} values) must have the same length")
        axes = const_ints(ctx, 2)
        if axes is not None and data.rank is not None:
            with infer_errors(ctx):
                normalize_axes(axes, data.rank, "axes")
        return [TensorSpec(ctx.input_type(0), data)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, shift_v, axes_v = inputs
        shifts, axes = roll_plan(ints(shift_v), ints(axes_v), shift_v.ndim == 0, x.ndim)
        if not axes:
            return [x.copy()]
        return [np.roll(x, shifts, axis=axes)]
