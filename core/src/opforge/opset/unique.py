"""Unique-10: the unique elements of a tensor (or unique slices along ``axis``), with the
index of each one's first occurrence, the position of every input element (or slice) in the
unique output, and the count of each unique one.

``sorted``: ascending order (slices compare lexicographically); otherwise the order of first
occurrence.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    axis_input,
    dims_product,
    index_type,
    infer_errors,
    normalize_axis,
    scalar_int,
)
from opforge.shape import PartialShape


class UniqueAttrs(OpAttrs):
    sorted: bool = True
    index_element_type: Type = Type.i64
    count_element_type: Type = Type.i64

    @field_validator("index_element_type", "count_element_type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Type:
        return index_type(v)


class Unique(Op):
    type_name = "Unique"
    value_inputs = (1,)
    data_dependent_shape = True
    version = "opset10"
    Attrs = UniqueAttrs
    min_inputs = 1
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: UniqueAttrs = ctx.attrs  # type: ignore[assignment]
        t = ctx.input_type(0)
        data = ctx.input_shape(0)
        it, ct = a.index_element_type, a.count_element_type
        if ctx.num_inputs == 1:
            n = 1 if data.rank == 0 else None if data.rank is None else dims_product(data.dims)
            return [
                TensorSpec(t, PartialShape([1 if n == 1 else None])),
                TensorSpec(it, PartialShape([1 if n == 1 else None])),
                TensorSpec(it, PartialShape([n])),
                TensorSpec(ct, PartialShape([1 if n == 1 else None])),
            ]
        axis = axis_input(ctx, 1)
        if axis is None:
            raise ctx.error("the axis input must be a constant (the output shapes depend on it)")
        if data.rank is None:
            dyn = PartialShape([None])
            return [
                TensorSpec(t, PartialShape.dynamic()),
                TensorSpec(it, dyn),
                TensorSpec(it, dyn),
                TensorSpec(ct, dyn),
            ]
        with infer_errors(ctx):
            if data.rank == 0:
                raise ShapeError("a scalar has no axis to take unique slices along")
            ax = normalize_axis(axis, data.rank)
        dims = list(data.dims)
        dims[ax] = None
        return [
            TensorSpec(t, PartialShape(dims)),
            TensorSpec(it, PartialShape([None])),
            TensorSpec(it, PartialShape([data.dims[ax]])),
            TensorSpec(ct, PartialShape([None])),
        ]

    @classmethod
    def evaluate(cls, attrs: UniqueAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        if len(inputs) > 1:
            if x.ndim == 0:
                raise ShapeError("a scalar has no axis to take unique slices along")
            ax: int | None = normalize_axis(scalar_int(inputs[1], "axis"), x.ndim)
        else:
            ax, x = None, x.reshape(-1)
        values, first, inverse, counts = np.unique(
            x, return_index=True, return_inverse=True, return_counts=True, axis=ax
        )
        inverse = inverse.reshape(-1)
        if not attrs.sorted:
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            values = np.take(values, order, axis=ax or 0)
            first, counts, inverse = first[order], counts[order], rank[inverse]
        it, ct = attrs.index_element_type.np, attrs.count_element_type.np
        return [values, first.astype(it), inverse.astype(it), counts.astype(ct)]
