"""QuantizedAvgPool: average pooling of a u8/i8 tensor read through a per-tensor dequantization,
written on the output's grid: DequantizeLinear -> AvgPool (or a global average pool, ReduceMean
over the spatial axes) -> QuantizeLinear as one node. Made by ``opforge_cpu.passes.int8``
(Inception's and DenseNet's average pools, every squeeze-excitation's global one); run by
csrc/kernels/quantized_avg_pool.cpp, which sums the integers exactly, so the result differs from
the QDQ graph's (an f32 sum) only where the two round a value near a .5 tie differently.

The attributes are AvgPool's, plus the window's paddings resolved against the input (what a
padded cell counts for with and without ``exclude_pad``) and the scales and zero points."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.op import InferContext, TensorSpec
from opforge.opset.avg_pool import AvgPool, AvgPoolAttrs

from opforge_cpu.ops._cpu_op import CpuOp
from opforge_cpu.ops._quantized import RequantizedAttrs, evaluate_requantized, infer_requantized


class QuantizedAvgPoolAttrs(AvgPoolAttrs, RequantizedAttrs):
    #: the paddings resolved for the static input (auto_pad applied), the reference's geometry
    window_begin: list[int]
    window_end: list[int]


class QuantizedAvgPool(CpuOp):
    type_name = "QuantizedAvgPool"
    Attrs = QuantizedAvgPoolAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return infer_requantized(ctx, AvgPool, ctx.attrs)  # type: ignore[arg-type]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return evaluate_requantized(attrs, lambda x: AvgPool.evaluate(attrs, [x])[0], inputs[0])
