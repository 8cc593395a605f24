"""ConvertLike-1: input 0 converted to the element type of input 1 (whose values are unused),
with the conversion rules of Convert-1."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import InferContext, Op, TensorSpec
from opforge.opset._numeric_cast import convert_array


class ConvertLike(Op):
    type_name = "ConvertLike"
    version = "opset1"
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.input_type(1), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [convert_array(inputs[0], inputs[1].dtype)]
