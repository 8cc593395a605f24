"""GatherElements-6: ``out[i][j][k] = data[i][indices[i][j][k]][k]`` (for axis 1): the output
has the shape of ``indices``. Negative indices count from the end; indices out of range raise."""

from __future__ import annotations

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    check_index_type,
    check_indices,
    infer_errors,
    merge_dim,
    normalize_axis,
)
from opforge.shape import PartialShape


class GatherElementsAttrs(OpAttrs):
    axis: int


def gather_elements_shape(data: PartialShape, indices: PartialShape, axis: int) -> PartialShape:
    if data.rank is None and indices.rank is None:
        return PartialShape.dynamic()
    rank = data.rank if data.rank is not None else indices.rank
    if rank == 0:
        raise ShapeError("data and indices must have rank 1 or more, got scalars")
    ax = normalize_axis(axis, rank or 0)
    if data.rank is None:
        return indices
    if indices.rank is None:
        return PartialShape([None if i == ax else d for i, d in enumerate(data.dims)])
    if data.rank != indices.rank:
        raise ShapeError(f"data {data} and indices {indices} must have the same rank")
    return PartialShape(
        [
            i if k == ax else merge_dim(d, i, f"data {data} and indices {indices} differ in dimension {k}")
            for k, (d, i) in enumerate(zip(data.dims, indices.dims))
        ]
    )


class GatherElements(Op):
    type_name = "GatherElements"
    cost_class = CostClass.MOVEMENT
    version = "opset6"
    Attrs = GatherElementsAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: GatherElementsAttrs = ctx.attrs  # type: ignore[assignment]
        check_index_type(ctx, 1, "indices")
        with infer_errors(ctx):
            shape = gather_elements_shape(ctx.input_shape(0), ctx.input_shape(1), a.axis)
        return [TensorSpec(ctx.input_type(0), shape)]

    @classmethod
    def evaluate(cls, attrs: GatherElementsAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        data, indices = inputs
        gather_elements_shape(PartialShape(data.shape), PartialShape(indices.shape), attrs.axis)
        ax = normalize_axis(attrs.axis, data.ndim)
        idx = check_indices(indices, data.shape[ax], f"GatherElements index (axis {ax})")
        return [np.take_along_axis(data, idx, axis=ax)]
