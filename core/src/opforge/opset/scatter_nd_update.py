"""ScatterNDUpdate-3: a copy of ``data`` with the slices addressed by index tuples (the last
dimension of ``indices``) replaced by ``updates``. Of repeated indices the last update wins.
Negative indices count from the end; indices out of range raise.

OpenVINO added this op to opset4 (IR files say ``version="opset4"``; OpenVINO refuses
``opset3``), so that is the version string here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    check_index_type,
    check_indices,
    infer_errors,
    last_wins,
    same_types,
)
from opforge.shape import PartialShape


def check_scatter_nd_shapes(data: PartialShape, indices: PartialShape, updates: PartialShape) -> None:
    if indices.rank == 0:
        raise ShapeError("indices must have rank 1 or more, got a scalar")
    if data.rank is None or indices.rank is None or indices.dims[-1] is None:
        return
    k = indices.dims[-1]
    if k > data.rank:
        raise ShapeError(f"index tuples have {k} values but data {data} has rank {data.rank}")
    expected = PartialShape([*indices.dims[:-1], *data.dims[k:]])
    if not updates.compatible(expected):
        raise ShapeError(
            f"updates {updates} must have shape indices.shape[:-1] + data.shape[{k}:] = {expected}"
        )


class ScatterNDUpdate(Op):
    type_name = "ScatterNDUpdate"
    cost_class = CostClass.MOVEMENT
    version = "opset4"
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_index_type(ctx, 1, "indices")
        t = same_types(ctx, (0, 2), "data and updates")
        with infer_errors(ctx):
            check_scatter_nd_shapes(ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2))
        return [TensorSpec(t, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        data, indices, updates = inputs
        check_scatter_nd_shapes(
            PartialShape(data.shape), PartialShape(indices.shape), PartialShape(updates.shape)
        )
        k = indices.shape[-1]
        m = math.prod(indices.shape[:-1])
        out = data.copy()
        if m == 0:
            return [out]
        coords = [
            check_indices(
                indices[..., j], data.shape[j], f"ScatterNDUpdate index (data dimension {j})"
            ).reshape(m)
            for j in range(k)
        ]
        linear = np.ravel_multi_index(coords, data.shape[:k]) if k else np.zeros(m, np.int64)
        keep = last_wins(linear)
        rest = math.prod(data.shape[k:])
        flat = out.reshape(math.prod(data.shape[:k]), rest)  # a view: out is contiguous
        flat[linear[keep]] = updates.reshape(m, rest)[keep]
        return [out]
