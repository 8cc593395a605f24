"""MVN-6: mean-variance normalisation over the axes given by the second input.

``normalize_variance`` divides the centred data by ``sqrt(var + eps)`` (``inside_sqrt``) or by
``sqrt(var) + eps`` (``outside_sqrt``); otherwise the op only subtracts the mean.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import (
    check_integral,
    check_rank,
    const_ints,
    lower_enum,
    normalize_axes,
    same_type,
    to_work,
)


class MVNAttrs(OpAttrs):
    normalize_variance: bool
    eps: float
    eps_mode: Literal["inside_sqrt", "outside_sqrt"]

    _enums = field_validator("eps_mode", mode="before")(lower_enum)


class MVN(Op):
    type_name = "MVN"
    version = "opset6"
    Attrs = MVNAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = same_type(ctx, [(0, "data")], "float")
        check_integral(ctx, 1, "axes")
        check_rank(ctx, 1, "axes", [1])
        ds = ctx.input_shape(0)
        axes = const_ints(ctx, 1)
        if ds.rank is not None:
            n_axes = ctx.input_shape(1)[0] if ctx.input_shape(1).rank == 1 else None
            if n_axes is not None and n_axes > ds.rank:
                raise ctx.error(f"input 1 (axes) has {n_axes} elements, more than the data rank {ds.rank}")
            if axes is not None:
                normalize_axes(ctx, axes, ds.rank, "input 1 (axes)")
        return [TensorSpec(t, ds)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: MVNAttrs = attrs
        x = to_work(inputs[0])
        axes = tuple(int(v) % x.ndim for v in np.asarray(inputs[1]).reshape(-1))
        y = x - x.mean(axis=axes, keepdims=True)
        if a.normalize_variance:
            var = np.mean(y * y, axis=axes, keepdims=True)
            eps = np.asarray(a.eps, dtype=x.dtype)
            y = y / (np.sqrt(var + eps) if a.eps_mode == "inside_sqrt" else np.sqrt(var) + eps)
        return [y.astype(inputs[0].dtype)]
