"""Result-1: a model output."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec


class Result(Op):
    type_name = "Result"
    cost_class = CostClass.STRUCTURAL
    version = "opset1"

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [inputs[0]]
