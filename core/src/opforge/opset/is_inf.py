"""IsInf-10: true where an element is an infinity of a detected sign; the output is boolean.

``detect_negative`` and ``detect_positive`` choose which infinities are detected.
"""

from __future__ import annotations

import numpy as np

from opforge.element_type import Type
from opforge.op import InferContext, OpAttrs, TensorSpec
from opforge.opset._elementwise import UnaryElementwise, check_type_class


class IsInfAttrs(OpAttrs):
    detect_negative: bool = True
    detect_positive: bool = True


class IsInf(UnaryElementwise):
    type_name = "IsInf"
    version = "opset10"
    Attrs = IsInfAttrs
    accepts = "float"

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_type_class(ctx, ctx.input_type(0), cls.accepts, "input 0")
        return [TensorSpec(Type.boolean, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: IsInfAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        # f16/bf16 go through f32 (exact), since bfloat16 is not a NumPy floating kind.
        v = inputs[0].astype(np.float32) if inputs[0].dtype.itemsize < 4 else inputs[0]
        out = np.zeros(v.shape, dtype=np.bool_)
        if attrs.detect_positive:
            out |= np.isposinf(v)
        if attrs.detect_negative:
            out |= np.isneginf(v)
        return [out]
