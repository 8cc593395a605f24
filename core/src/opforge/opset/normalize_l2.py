"""NormalizeL2-1: ``x / sqrt(sum(x**2 over axes) + eps)`` (``eps_mode="add"``) or
``x / sqrt(max(sum, eps))`` (``"max"``). Empty axes divide every element by itself: 1, or 0 for
zeros (OpenVINO's corner case, not the formula's ``x / sqrt(x**2 + eps)``)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import check_axes, data_and_axes, lower_enum, to_work, wrap_axes


class NormalizeL2Attrs(OpAttrs):
    eps: float
    eps_mode: Literal["add", "max"]

    _enums = field_validator("eps_mode", mode="before")(lower_enum)


class NormalizeL2(Op):
    type_name = "NormalizeL2"
    cost_class = CostClass.REDUCING
    value_inputs = (1,)
    version = "opset1"
    Attrs = NormalizeL2Attrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t, ds, axes = data_and_axes(ctx, [0, 1])
        check_axes(ctx, axes, ds)
        return [TensorSpec(t, ds)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: NormalizeL2Attrs = attrs
        x = to_work(inputs[0])
        axes = wrap_axes(inputs[1], x.ndim) if x.ndim else ()
        if not axes:
            return [np.where(x == 0, 0, 1).astype(inputs[0].dtype)]
        sq = np.sum(x * x, axis=axes, keepdims=True)
        eps = np.asarray(a.eps, dtype=x.dtype)
        norm = np.sqrt(sq + eps if a.eps_mode == "add" else np.maximum(sq, eps))
        with np.errstate(invalid="ignore", divide="ignore"):
            y = x / norm
        return [y.astype(inputs[0].dtype)]
