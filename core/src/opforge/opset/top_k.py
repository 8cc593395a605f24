"""TopK-11: the ``k`` largest (``mode="max"``) or smallest (``"min"``) elements along ``axis``,
and their indices.

``sort="value"`` orders the results by value, ``"index"`` by position, and ``"none"`` leaves the
order to the implementation (here: by value, as OpenVINO's CPU plugin does). Equal values are
always taken lowest index first, which satisfies ``stable=true`` and is a valid order otherwise.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import (
    check_index_element_type,
    check_integral,
    const_ints,
    lower_enum,
    normalize_axis,
    parse_type,
    same_type,
)
from opforge.shape import Dim, PartialShape


class TopKAttrs(OpAttrs):
    axis: int
    mode: Literal["max", "min"]
    sort: Literal["value", "index", "none"]
    index_element_type: Type = Type.i32
    stable: bool = False

    _enums = field_validator("mode", "sort", mode="before")(lower_enum)

    _types = field_validator("index_element_type", mode="before")(parse_type)


class TopK(Op):
    type_name = "TopK"
    cost_class = CostClass.REDUCING
    value_inputs = (1,)
    scalar_inputs = (1,)
    version = "opset11"
    Attrs = TopKAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: TopKAttrs = ctx.attrs  # type: ignore[assignment]
        check_index_element_type(ctx, a.index_element_type)
        if a.stable and a.sort == "none":
            raise ctx.error("stable=true needs sort='value' or sort='index', got sort='none'")
        t = same_type(ctx, [(0, "data")])
        check_integral(ctx, 1, "k")
        ks = ctx.input_shape(1)
        if ks.rank is not None and ks.rank != 0:
            raise ctx.error(f"input 1 (k) has shape {ks}, expected a scalar")
        kv = const_ints(ctx, 1)
        k: Dim = None if kv is None else kv[0]
        if k is not None and k < 0:
            raise ctx.error(f"input 1 (k) is {k}, expected a non-negative value")
        ds = ctx.input_shape(0)
        if ds.rank is None:
            return [TensorSpec(t, ds), TensorSpec(a.index_element_type, ds)]
        if ds.rank == 0:
            raise ctx.error("input 0 (data) is a scalar, expected rank 1 or more")
        axis = normalize_axis(ctx, a.axis, ds.rank)
        size = ds[axis]
        if k is not None and size is not None and k > size:
            raise ctx.error(f"input 1 (k) is {k}, larger than dimension {axis} of the data {ds}")
        dims = list(ds.dims)
        dims[axis] = k
        out = PartialShape(dims)
        return [TensorSpec(t, out), TensorSpec(a.index_element_type, out)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: TopKAttrs = attrs
        x = inputs[0]
        k = int(np.asarray(inputs[1]).reshape(-1)[0])
        axis = a.axis % x.ndim
        v = np.moveaxis(x, axis, -1)
        n = v.shape[-1]
        if a.mode == "min":
            order = np.argsort(v, axis=-1, kind="stable")
        else:
            # Descending with ties lowest-index first, without negating (unsigned types wrap):
            # sort the reversed row ascending, stably, and read it backwards.
            order = (n - 1) - np.argsort(v[..., ::-1], axis=-1, kind="stable")[..., ::-1]
        top = order[..., :k]
        if a.sort == "index":
            top = np.sort(top, axis=-1)
        values = np.take_along_axis(v, top, axis=-1)
        return [
            np.moveaxis(values, -1, axis).astype(x.dtype),
            np.moveaxis(top, -1, axis).astype(a.index_element_type.np),
        ]
