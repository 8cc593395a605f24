"""IsFinite-10: true where an element is neither infinite nor NaN; the output is boolean."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.op import InferContext, TensorSpec
from opforge.opset._elementwise import UnaryElementwise, check_type_class


class IsFinite(UnaryElementwise):
    type_name = "IsFinite"
    version = "opset10"
    accepts = "float"

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_type_class(ctx, ctx.input_type(0), cls.accepts, "input 0")
        return [TensorSpec(Type.boolean, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        # f16/bf16 go through f32 (exact), since bfloat16 is not a NumPy floating kind.
        v = inputs[0].astype(np.float32) if inputs[0].dtype.itemsize < 4 else inputs[0]
        return [np.asarray(np.isfinite(v), dtype=np.bool_)]
