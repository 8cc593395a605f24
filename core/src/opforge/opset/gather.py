"""Gather-8: pick slices of ``data`` along ``axis`` by ``indices``, optionally per batch.

Negative indices count from the end. OpenVINO fills the output with zeros for indices out of
``[-dim, dim)``; this reference raises instead, naming the index, because a silent zero hides
a wrong model far from its cause.
"""

from __future__ import annotations

import math

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    axis_input,
    check_indices,
    check_integral,
    infer_errors,
    merge_dim,
    normalize_axis,
    scalar_int,
)
from opforge.shape import Dim, PartialShape


class GatherAttrs(OpAttrs):
    batch_dims: int = 0


def _batch_dims(batch_dims: int, data_rank: int, indices_rank: int) -> int:
    bd = batch_dims + indices_rank if batch_dims < 0 else batch_dims
    if not 0 <= bd <= indices_rank:
        raise ShapeError(f"batch_dims {batch_dims} is out of range for indices of rank {indices_rank}")
    if bd > data_rank:
        raise ShapeError(f"batch_dims {batch_dims} is larger than the data rank {data_rank}")
    return bd


def _axis(axis: int, data_rank: int, bd: int) -> int:
    ax = normalize_axis(axis, data_rank)
    if bd > ax:
        raise ShapeError(f"batch_dims ({bd}) must not be greater than axis ({ax})")
    return ax


def gather_shape(
    data: PartialShape, indices: PartialShape, axis: int | None, batch_dims: int
) -> PartialShape:
    if data.rank is None or indices.rank is None:
        return PartialShape.dynamic()
    bd = _batch_dims(batch_dims, data.rank, indices.rank)
    batch = [
        merge_dim(d, i, f"batch dimension {k} of data {data} and indices {indices} differ")
        for k, (d, i) in enumerate(zip(data.dims[:bd], indices.dims[:bd]))
    ]
    if axis is None:
        return PartialShape(batch + [None] * (data.rank + indices.rank - 1 - 2 * bd))
    ax = _axis(axis, data.rank, bd)
    dims: list[Dim] = batch + list(data.dims[bd:ax]) + list(indices.dims[bd:]) + list(data.dims[ax + 1 :])
    return PartialShape(dims)


class Gather(Op):
    type_name = "Gather"
    cost_class = CostClass.MOVEMENT
    value_inputs = (2,)
    scalar_inputs = (2,)
    version = "opset8"
    Attrs = GatherAttrs
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: GatherAttrs = ctx.attrs  # type: ignore[assignment]
        check_integral(ctx, 1, "indices")
        axis = axis_input(ctx, 2)
        with infer_errors(ctx):
            shape = gather_shape(ctx.input_shape(0), ctx.input_shape(1), axis, a.batch_dims)
        return [TensorSpec(ctx.input_type(0), shape)]

    @classmethod
    def evaluate(cls, attrs: GatherAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        data, indices, axis_v = inputs
        bd = _batch_dims(attrs.batch_dims, data.ndim, indices.ndim)
        ax = _axis(scalar_int(axis_v, "axis"), data.ndim, bd)
        out_shape = gather_shape(PartialShape(data.shape), PartialShape(indices.shape), ax, bd).to_tuple()
        idx = check_indices(indices, data.shape[ax], f"Gather index (axis {ax})")
        nb = math.prod(data.shape[:bd])
        outer = math.prod(data.shape[bd:ax])
        inner = math.prod(data.shape[ax + 1 :])
        d = data.reshape(nb, outer, data.shape[ax], inner)
        i = idx.reshape(nb, 1, math.prod(indices.shape[bd:]), 1)
        out = np.take_along_axis(d, np.broadcast_to(i, (nb, outer, i.shape[2], inner)), axis=2)
        return [out.reshape(out_shape)]
