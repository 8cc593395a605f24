"""Identity-16: a copy of its input."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec


class Identity(Op):
    type_name = "Identity"
    cost_class = CostClass.MOVEMENT
    version = "opset16"

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [inputs[0].copy()]
