"""MVN-6: mean-variance normalisation over the axes given by the second input.

``normalize_variance`` divides the centred data by ``sqrt(var + eps)`` (``inside_sqrt``) or by
``sqrt(var) + eps`` (``outside_sqrt``); otherwise the op only subtracts the mean.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import check_axes, data_and_axes, lower_enum, to_work, wrap_axes


class MVNAttrs(OpAttrs):
    normalize_variance: bool
    eps: float
    eps_mode: Literal["inside_sqrt", "outside_sqrt"]

    _enums = field_validator("eps_mode", mode="before")(lower_enum)


class MVN(Op):
    type_name = "MVN"
    cost_class = CostClass.REDUCING
    value_inputs = (1,)
    version = "opset6"
    Attrs = MVNAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t, ds, axes = data_and_axes(ctx, [1])
        if ds.rank is not None:
            n_axes = ctx.input_shape(1)[0] if ctx.input_shape(1).rank == 1 else None
            if n_axes is not None and n_axes > ds.rank:
                raise ctx.error(f"input 1 (axes) has {n_axes} elements, more than the data rank {ds.rank}")
        check_axes(ctx, axes, ds)
        return [TensorSpec(t, ds)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: MVNAttrs = attrs
        x = to_work(inputs[0])
        axes = wrap_axes(inputs[1], x.ndim)
        y = x - x.mean(axis=axes, keepdims=True)
        if a.normalize_variance:
            var = np.mean(y * y, axis=axes, keepdims=True)
            eps = np.asarray(a.eps, dtype=x.dtype)
            y = y / (np.sqrt(var + eps) if a.eps_mode == "inside_sqrt" else np.sqrt(var) + eps)
        return [y.astype(inputs[0].dtype)]
