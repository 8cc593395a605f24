"""QuantizedMaxPool: max pooling of a u8/i8 tensor, for DequantizeLinear -> MaxPool ->
QuantizeLinear with one scale and zero point on both sides (the maximum commutes with that
monotonic map, so pooling the integers is exact). Made by ``opforge_cpu.passes.int8``; run by
csrc/kernels/quantized_max_pool.cpp (oneDNN int8 pooling, in the layout its producer wrote)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from opforge.element_type import Type
from opforge.op import InferContext, Op, TensorSpec
from opforge.opset.max_pool import MaxPool, MaxPoolAttrs


class QuantizedMaxPool(Op):
    type_name = "QuantizedMaxPool"
    version = "opforge_cpu"
    Attrs = MaxPoolAttrs
    cpu_internal: ClassVar[bool] = True

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        if ctx.input_type(0) not in (Type.u8, Type.i8):
            raise ctx.error(f"input 0 is {ctx.input_type(0).ir}, expected u8 or i8")
        return MaxPool.infer(ctx)[:1]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return MaxPool.evaluate(attrs, inputs)[:1]
