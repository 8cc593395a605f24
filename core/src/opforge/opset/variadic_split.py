"""VariadicSplit-1: cut a tensor along an axis into parts of the given lengths (one may be -1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    axis_input,
    check_integral,
    check_rank,
    const_ints,
    infer_errors,
    ints,
    normalize_axis,
    scalar_int,
)
from opforge.shape import Dim, PartialShape


def split_lengths(lengths: Sequence[int], dim: Dim) -> list[Dim]:
    """The part lengths with the -1 resolved (None when the split dimension is unknown)."""
    minus_one = [i for i, v in enumerate(lengths) if v == -1]
    if len(minus_one) > 1:
        raise ShapeError(f"split_lengths {list(lengths)} has more than one -1")
    bad = [v for v in lengths if v < -1]
    if bad:
        raise ShapeError(f"split_lengths {list(lengths)} has invalid length {bad[0]} (must be >= -1)")
    out: list[Dim] = [v if v != -1 else None for v in lengths]
    if dim is None:
        return out
    known = sum(v for v in lengths if v != -1)
    if minus_one:
        if known > dim:
            raise ShapeError(
                f"split_lengths {list(lengths)} add up to {known}, more than the dimension {dim}"
            )
        out[minus_one[0]] = dim - known
    elif known != dim:
        raise ShapeError(f"split_lengths {list(lengths)} add up to {known}, not the dimension {dim}")
    return out


class VariadicSplit(Op):
    type_name = "VariadicSplit"
    cost_class = CostClass.MOVEMENT
    value_inputs = (1, 2)
    version = "opset1"
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        axis_v = axis_input(ctx, 1)
        check_integral(ctx, 2, "split_lengths")
        check_rank(ctx, 2, "split_lengths", (1,))
        ls = ctx.input_shape(2)
        if ls.rank is None or ls.dims[0] is None:
            raise ctx.error(
                f"split_lengths must have a static shape (it sets the number of outputs), got {ls}"
            )
        n = ls.dims[0]
        t = ctx.input_type(0)
        data = ctx.input_shape(0)
        if data.rank is None:
            return [TensorSpec(t, PartialShape.dynamic())] * n
        if axis_v is None:
            return [TensorSpec(t, PartialShape.dynamic(data.rank))] * n
        lengths = const_ints(ctx, 2)
        with infer_errors(ctx):
            axis = normalize_axis(axis_v, data.rank)
            parts = [None] * n if lengths is None else split_lengths(lengths, data.dims[axis])
        out = []
        for p in parts:
            dims = list(data.dims)
            dims[axis] = p
            out.append(TensorSpec(t, PartialShape(dims)))
        return out

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, axis_v, lengths_v = inputs
        axis = normalize_axis(scalar_int(axis_v, "axis"), x.ndim)
        parts = [int(p or 0) for p in split_lengths(ints(lengths_v), x.shape[axis])]
        cuts = np.cumsum(parts)[:-1]
        return list(np.split(x, cuts, axis=axis))
