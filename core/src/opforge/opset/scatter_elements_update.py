"""ScatterElementsUpdate-12: a copy of ``data`` where, for every element of ``indices``, the
element addressed by that index along ``axis`` (and its own position elsewhere) is replaced by,
or reduced with, the matching element of ``updates``.

Reductions follow OpenVINO: updates apply in row-major order (``none``: the last wins);
without ``use_init_val`` the original value of an updated element is left out of the reduction;
``mean`` of integers truncates toward zero.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    axis_input,
    check_indices,
    check_integral,
    infer_errors,
    last_wins,
    normalize_axis,
    same_types,
    scalar_int,
)
from opforge.shape import PartialShape


class ScatterElementsUpdateAttrs(OpAttrs):
    reduction: Literal["none", "sum", "prod", "min", "max", "mean"] = "none"
    use_init_val: bool = True


def check_shapes(data: PartialShape, indices: PartialShape, updates: PartialShape, axis: int | None) -> None:
    if not indices.compatible(updates):
        raise ShapeError(f"indices {indices} and updates {updates} must have the same shape")
    if data.rank is not None and indices.rank is not None and data.rank != indices.rank:
        raise ShapeError(f"data {data} and indices {indices} must have the same rank")
    if data.rank is not None and axis is not None:
        if data.rank == 0:
            raise ShapeError("data must have rank 1 or more, got a scalar")
        normalize_axis(axis, data.rank)


def _identity(reduction: str, dtype: np.dtype) -> np.ndarray:
    """The neutral element of a reduction: what an updated element starts from without
    ``use_init_val``."""
    if reduction in ("sum", "mean"):
        return np.zeros((), dtype)
    if reduction == "prod":
        return np.ones((), dtype)
    if dtype.kind == "b":
        return np.array(reduction == "min")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array(info.max if reduction == "min" else info.min, dtype)
    return np.array(np.inf if reduction == "min" else -np.inf, dtype)


class ScatterElementsUpdate(Op):
    type_name = "ScatterElementsUpdate"
    cost_class = CostClass.MOVEMENT
    value_inputs = (3,)
    scalar_inputs = (3,)
    version = "opset12"
    Attrs = ScatterElementsUpdateAttrs
    min_inputs = 4
    max_inputs = 4

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ScatterElementsUpdateAttrs = ctx.attrs  # type: ignore[assignment]
        check_integral(ctx, 1, "indices")
        axis = axis_input(ctx, 3)
        t = same_types(ctx, (0, 2), "data and updates")
        if t is Type.boolean and a.reduction == "mean":
            raise ctx.error("reduction 'mean' is not defined for boolean data")
        with infer_errors(ctx):
            check_shapes(ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2), axis)
        return [TensorSpec(t, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: ScatterElementsUpdateAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        data, indices, updates, axis_v = inputs
        axis = scalar_int(axis_v, "axis")
        check_shapes(PartialShape(data.shape), PartialShape(indices.shape), PartialShape(updates.shape), axis)
        ax = normalize_axis(axis, data.ndim)
        for k, (d, i) in enumerate(zip(data.shape, indices.shape)):
            if k != ax and i > d:
                raise ShapeError(
                    f"indices {indices.shape} are larger than data {data.shape} in dimension {k}, which is "
                    f"not the scatter axis {ax}"
                )
        idx = check_indices(indices, data.shape[ax], f"ScatterElementsUpdate index (axis {ax})")
        # The full coordinates of every target: its own position, with the axis coordinate
        # replaced by the index value.
        coords: list[np.ndarray] = list(np.indices(indices.shape, sparse=True))
        coords[ax] = idx
        target = tuple(np.broadcast_to(c, indices.shape).reshape(-1) for c in coords)
        upd = updates.reshape(-1)
        out = data.copy()
        red = attrs.reduction
        if red == "none":
            linear = np.ravel_multi_index(target, data.shape) if upd.size else np.zeros(0, np.int64)
            keep = last_wins(linear)
            out.reshape(-1)[linear[keep]] = upd[keep]
            return [out]
        if not attrs.use_init_val:
            out[target] = _identity(red, data.dtype)
        with np.errstate(all="ignore"):
            if red in ("sum", "mean"):
                np.add.at(out, target, upd)
            elif red == "prod":
                np.multiply.at(out, target, upd)
            elif red == "min":
                np.minimum.at(out, target, upd)
            else:
                np.maximum.at(out, target, upd)
            if red == "mean":
                count = np.zeros(data.shape, np.int64)
                np.add.at(count, target, 1)
                touched = count > 0
                if attrs.use_init_val:
                    count += 1
                total, n = out[touched], count[touched]
                if data.dtype.kind in "iu":
                    # C++ integer division: truncation toward zero.
                    q = np.abs(total.astype(np.int64)) // n
                    out[touched] = (np.sign(total.astype(np.int64)) * q).astype(data.dtype)
                else:
                    out[touched] = (total / n.astype(data.dtype)).astype(data.dtype)
        return [out]
