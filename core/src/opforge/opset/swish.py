"""Swish-4: x * sigmoid(beta * x) on a floating-point tensor; ``beta`` is an optional scalar
second input (1.0 when absent)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._elementwise import check_type_class


class Swish(Op):
    type_name = "Swish"
    cost_class = CostClass.TRANSCENDENTAL
    value_inputs = (1,)
    version = "opset4"
    min_inputs = 1
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = ctx.input_type(0)
        check_type_class(ctx, t, "float", "input 0 (data)")
        if ctx.num_inputs == 2:
            tb = ctx.input_type(1)
            if t is not Type.dynamic and tb is not Type.dynamic and tb != t:
                raise ctx.error(f"input 1 (beta) has element type {tb}, expected {t} like the data")
            rank = ctx.input_shape(1).rank
            if rank is not None and rank != 0:
                raise ctx.error(f"input 1 (beta) must be a scalar, got shape {ctx.input_shape(1)}")
        return [TensorSpec(t, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        beta = float(inputs[1].astype(np.float64).reshape(-1)[0]) if len(inputs) > 1 else 1.0
        v = x.astype(np.float64)
        with np.errstate(over="ignore"):
            y = v / (1.0 + np.exp(-beta * v))
        return [y.astype(x.dtype)]
