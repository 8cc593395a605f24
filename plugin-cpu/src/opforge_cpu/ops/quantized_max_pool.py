"""QuantizedMaxPool: max pooling of a u8/i8 tensor, for DequantizeLinear -> MaxPool ->
QuantizeLinear with one scale and zero point on both sides (the maximum commutes with that
monotonic map, so pooling the integers is exact). Made by ``opforge_cpu.passes.int8``; run by
csrc/kernels/quantized_max_pool.cpp (oneDNN int8 pooling, in the layout its producer wrote)."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.op import InferContext, TensorSpec
from opforge.opset.max_pool import MaxPool, MaxPoolAttrs

from opforge_cpu.ops._cpu_op import CpuOp
from opforge_cpu.ops._quantized import check_int8_input


class QuantizedMaxPool(CpuOp):
    type_name = "QuantizedMaxPool"
    Attrs = MaxPoolAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_int8_input(ctx, 0)
        return MaxPool.infer(ctx)[:1]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return MaxPool.evaluate(attrs, inputs)[:1]
