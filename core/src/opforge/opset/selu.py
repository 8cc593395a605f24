"""Selu-1: lambda * x for x > 0, lambda * alpha * (exp(x) - 1) otherwise, on a floating-point
tensor; ``alpha`` and ``lambda`` are one-element inputs of the data's type."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._elementwise import check_type_class


class Selu(Op):
    type_name = "Selu"
    cost_class = CostClass.TRANSCENDENTAL
    value_inputs = (1, 2)
    version = "opset1"
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = ctx.input_type(0)
        check_type_class(ctx, t, "float", "input 0 (data)")
        for i, name in ((1, "alpha"), (2, "lambda")):
            ti = ctx.input_type(i)
            if t is not Type.dynamic and ti is not Type.dynamic and ti != t:
                raise ctx.error(f"input {i} ({name}) has element type {ti}, expected {t} like the data")
            shape = ctx.input_shape(i)
            if shape.is_static and math.prod(shape.to_tuple()) != 1:
                raise ctx.error(f"input {i} ({name}) must hold exactly one element, got shape {shape}")
        return [TensorSpec(t, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, alpha_in, lambda_in = inputs
        alpha = float(alpha_in.astype(np.float64).reshape(-1)[0])
        lam = float(lambda_in.astype(np.float64).reshape(-1)[0])
        v = x.astype(np.float64)
        y = lam * np.where(v > 0, v, alpha * np.expm1(v))
        return [y.astype(x.dtype)]
