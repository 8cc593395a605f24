"""GatherND-8: gather slices of ``data`` addressed by index tuples (the last dimension of
``indices``), optionally per batch. The output keeps the batch dimensions unflattened
(``indices.shape[:-1] + data.shape[batch_dims + K:]``). Negative indices count from the end;
indices out of range raise (OpenVINO reads garbage)."""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import ShapeError, check_index_type, check_indices, infer_errors, merge_dim
from opforge.shape import Dim, PartialShape


class GatherNDAttrs(OpAttrs):
    batch_dims: int = Field(default=0, ge=0)


def gather_nd_shape(data: PartialShape, indices: PartialShape, batch_dims: int) -> PartialShape:
    if indices.rank == 0:
        raise ShapeError("indices must have rank 1 or more, got a scalar")
    if indices.rank is not None and batch_dims >= indices.rank:
        raise ShapeError(f"batch_dims {batch_dims} must be less than the indices rank {indices.rank}")
    if data.rank is not None and batch_dims >= data.rank:
        raise ShapeError(f"batch_dims {batch_dims} must be less than the data rank {data.rank}")
    if data.rank is None or indices.rank is None or indices.dims[-1] is None:
        return PartialShape.dynamic()
    k = indices.dims[-1]
    if k + batch_dims > data.rank:
        raise ShapeError(
            f"index tuples have {k} values but data {data} has only {data.rank - batch_dims} "
            f"dimensions after {batch_dims} batch dimensions"
        )
    batch = [
        merge_dim(d, i, f"batch dimension {n} of data {data} and indices {indices} differ")
        for n, (d, i) in enumerate(zip(data.dims[:batch_dims], indices.dims[:batch_dims]))
    ]
    dims: list[Dim] = batch + list(indices.dims[batch_dims:-1]) + list(data.dims[batch_dims + k :])
    return PartialShape(dims)


class GatherND(Op):
    type_name = "GatherND"
    cost_class = CostClass.MOVEMENT
    version = "opset8"
    Attrs = GatherNDAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: GatherNDAttrs = ctx.attrs  # type: ignore[assignment]
        check_index_type(ctx, 1, "indices")
        with infer_errors(ctx):
            shape = gather_nd_shape(ctx.input_shape(0), ctx.input_shape(1), a.batch_dims)
        return [TensorSpec(ctx.input_type(0), shape)]

    @classmethod
    def evaluate(cls, attrs: GatherNDAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        data, indices = inputs
        bd = attrs.batch_dims
        out_shape = gather_nd_shape(PartialShape(data.shape), PartialShape(indices.shape), bd).to_tuple()
        k = indices.shape[-1]
        nb = math.prod(data.shape[:bd])
        m = math.prod(indices.shape[bd:-1])
        coords = tuple(
            check_indices(
                indices[..., j], data.shape[bd + j], f"GatherND index (data dimension {bd + j})"
            ).reshape(nb, m)
            for j in range(k)
        )
        batch = np.broadcast_to(np.arange(nb).reshape(nb, 1), (nb, m))
        d = data.reshape((nb, *data.shape[bd:]))
        return [d[(batch, *coords)].reshape(out_shape)]
