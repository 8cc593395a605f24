"""ScatterUpdate-3: a copy of ``data`` with the slices at ``indices`` along ``axis`` replaced by
``updates`` (shaped ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``). Of repeated
indices the last update wins. As in OpenVINO, negative indices are out of range and raise."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec
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


def check_scatter_update_shapes(
    data: PartialShape, indices: PartialShape, updates: PartialShape, axis: int | None
) -> None:
    if data.rank is None:
        return
    if data.rank == 0:
        raise ShapeError("data must have rank 1 or more, got a scalar")
    if axis is None or indices.rank is None:
        if (
            indices.rank is not None
            and updates.rank is not None
            and updates.rank != data.rank + indices.rank - 1
        ):
            raise ShapeError(
                f"updates {updates} must have rank data rank + indices rank - 1 "
                f"= {data.rank + indices.rank - 1}"
            )
        return
    ax = normalize_axis(axis, data.rank)
    expected = PartialShape([*data.dims[:ax], *indices.dims, *data.dims[ax + 1 :]])
    if not updates.compatible(expected):
        raise ShapeError(
            f"updates {updates} must have shape data.shape[:{ax}] + indices.shape + data.shape[{ax + 1}:] "
            f"= {expected}"
        )


class ScatterUpdate(Op):
    type_name = "ScatterUpdate"
    cost_class = CostClass.MOVEMENT
    value_inputs = (3,)
    scalar_inputs = (3,)
    version = "opset3"
    min_inputs = 4
    max_inputs = 4

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_integral(ctx, 1, "indices")
        axis = axis_input(ctx, 3)
        t = same_types(ctx, (0, 2), "data and updates")
        with infer_errors(ctx):
            check_scatter_update_shapes(ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2), axis)
        return [TensorSpec(t, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        data, indices, updates, axis_v = inputs
        ax = normalize_axis(scalar_int(axis_v, "axis"), data.ndim)
        check_scatter_update_shapes(
            PartialShape(data.shape), PartialShape(indices.shape), PartialShape(updates.shape), ax
        )
        idx = check_indices(indices, data.shape[ax], f"ScatterUpdate index (axis {ax})", allow_negative=False)
        n = idx.size
        flat_idx = idx.reshape(n)
        keep = last_wins(flat_idx)
        upd = updates.reshape(math.prod(data.shape[:ax]), n, math.prod(data.shape[ax + 1 :]))
        out = data.copy()
        view = out.reshape(math.prod(data.shape[:ax]), data.shape[ax], math.prod(data.shape[ax + 1 :]))
        view[:, flat_idx[keep], :] = upd[:, keep, :]
        return [out]
