"""OneHot-1: ``on_value`` where the new axis' position equals the index, ``off_value``
elsewhere. Indices outside ``[0, depth)`` (negative ones included) give a row of
``off_value``, as in OpenVINO's opset1."""

from __future__ import annotations

import numpy as np

from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    check_integral,
    check_rank,
    const_ints,
    infer_errors,
    normalize_axis,
    same_types,
    scalar_int,
)
from opforge.shape import Dim, PartialShape


class OneHotAttrs(OpAttrs):
    axis: int


def one_hot_shape(indices: PartialShape, depth: int | None, axis: int) -> PartialShape:
    if depth is not None and depth < 0:
        raise ShapeError(f"depth must not be negative, got {depth}")
    if indices.rank is None:
        return PartialShape.dynamic()
    ax = normalize_axis(axis, indices.rank + 1)
    dims: list[Dim] = list(indices.dims)
    dims.insert(ax, depth)
    return PartialShape(dims)


class OneHot(Op):
    type_name = "OneHot"
    value_inputs = (1,)
    scalar_inputs = (1,)
    version = "opset1"
    Attrs = OneHotAttrs
    min_inputs = 4
    max_inputs = 4

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: OneHotAttrs = ctx.attrs  # type: ignore[assignment]
        check_integral(ctx, 0, "indices")
        check_integral(ctx, 1, "depth")
        check_rank(ctx, 1, "depth", (0,))
        check_rank(ctx, 2, "on_value", (0,))
        check_rank(ctx, 3, "off_value", (0,))
        t = same_types(ctx, (2, 3), "on_value and off_value")
        depth = const_ints(ctx, 1)
        with infer_errors(ctx):
            shape = one_hot_shape(ctx.input_shape(0), None if depth is None else depth[0], a.axis)
        return [TensorSpec(t, shape)]

    @classmethod
    def evaluate(cls, attrs: OneHotAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        indices, depth_v, on, off = inputs
        depth = scalar_int(depth_v, "depth")
        shape = one_hot_shape(PartialShape(indices.shape), depth, attrs.axis).to_tuple()
        ax = normalize_axis(attrs.axis, indices.ndim + 1)
        idx = indices.astype(np.int64)
        positions = np.arange(depth, dtype=np.int64).reshape(
            [depth if i == ax else 1 for i in range(len(shape))]
        )
        hot = np.expand_dims(idx, ax) == positions
        return [np.where(hot, on, off).astype(on.dtype)]
