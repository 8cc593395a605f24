"""QuantizedInterpolate: Interpolate-11 of a u8/i8 image over H and W, read through a per-tensor
dequantization and written on the output's grid: DequantizeLinear -> Resize -> QuantizeLinear as
one node (a UNet decoder's bilinear upsampling between quantized convolutions). Made by
``opforge_cpu.passes.int8``; run by csrc/kernels/quantized_interpolate.cpp, which computes the
QDQ graph's f32 arithmetic with Interpolate's own weights over the channels-last bytes, so the
result differs from the QDQ graph's only where the two sum a value near a .5 tie in another
order.

Inputs are Interpolate's (data, sizes or scales, optional axes); the attributes are
Interpolate's plus the scales and zero points."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.op import InferContext, TensorSpec
from opforge.opset.interpolate import Interpolate, InterpolateAttrs

from opforge_cpu.ops._cpu_op import CpuOp
from opforge_cpu.ops._quantized import RequantizedAttrs, evaluate_requantized, infer_requantized


class QuantizedInterpolateAttrs(InterpolateAttrs, RequantizedAttrs):
    pass


class QuantizedInterpolate(CpuOp):
    type_name = "QuantizedInterpolate"
    Attrs = QuantizedInterpolateAttrs
    value_inputs = Interpolate.value_inputs
    min_inputs = Interpolate.min_inputs
    max_inputs = Interpolate.max_inputs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return infer_requantized(ctx, Interpolate, ctx.attrs)  # type: ignore[arg-type]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return evaluate_requantized(attrs, lambda x: Interpolate.evaluate(attrs, [x, *inputs[1:]])[0], inputs[0])
