"""QuantizedScaleShift: a per-channel scale and shift of a u8/i8 image [N, C, H, W] read through
its per-tensor dequantization, optionally clamped below at 0, and written on the output's grid:
``saturate(round_half_to_even(relu(((x - z_x) * s_x) * scale[c] + shift[c]) / s_y) + z_y)``.
Made by ``opforge_cpu.passes.int8`` for DequantizeLinear -> BatchNormalization [-> Relu] ->
QuantizeLinear (DenseNet's pre-activation BN after every concatenation), with ``scale`` and
``shift`` the CPU's BatchNormInference kernels compute from gamma, beta, mean and variance (in
double, then rounded to f32), so the node gives the bytes the Dequantize, BatchNormInference and
Quantize kernels gave one after the other. Run by csrc/kernels/quantized_scale_shift.cpp."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from opforge.element_type import Type
from opforge.op import InferContext, OpAttrs, TensorSpec

from opforge_cpu.ops._cpu_op import CpuOp
from opforge_cpu.ops._quantized import check_int8_input, check_scales
from opforge_cpu.ops.dequantize import Dequantize, DequantizeAttrs
from opforge_cpu.ops.quantize import Quantize, QuantizeAttrs


class QuantizedScaleShiftAttrs(OpAttrs):
    src_scale: float
    src_zero_point: int = 0
    dst_scale: float
    dst_zero_point: int = 0
    output_type: Literal["u8", "i8"] = "u8"
    #: max(., 0) after the shift (a NaN stays NaN, as the Relu kernel keeps it)
    relu: bool = False


class QuantizedScaleShift(CpuOp):
    """Inputs: 0 data (u8 or i8, [N, C, H, W]), 1 scale and 2 shift (f32 constants [C])."""

    type_name = "QuantizedScaleShift"
    Attrs = QuantizedScaleShiftAttrs
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: QuantizedScaleShiftAttrs = ctx.attrs  # type: ignore[assignment]
        check_int8_input(ctx, 0)
        check_scales(ctx, a.src_scale, a.dst_scale)
        data = ctx.input_shape(0)
        if data.rank is not None and data.rank != 4:
            raise ctx.error(f"input 0 has shape {data}, expected an image [N, C, H, W]")
        for i in (1, 2):
            s = ctx.input_shape(i)
            if ctx.input_type(i) is not Type.f32 or s.rank != 1 or (
                    data.rank is not None and data[1] is not None and s[0] is not None and s[0] != data[1]):
                raise ctx.error(f"input {i} is {ctx.input_type(i).ir} {s}, expected f32 [C] with C = {data[1]}")
        return [TensorSpec(Type.parse(a.output_type), data)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: QuantizedScaleShiftAttrs = attrs
        x = Dequantize.evaluate(DequantizeAttrs(scale=a.src_scale, zero_point=a.src_zero_point), [np.asarray(inputs[0])])[0]
        per_channel = (1, -1, 1, 1)
        scale = np.asarray(inputs[1], np.float32).reshape(per_channel)
        shift = np.asarray(inputs[2], np.float32).reshape(per_channel)
        # the product and the sum rounded one after the other, as the BatchNormInference kernel
        # (baseline x86-64: no FMA) computes them
        y = ((x * scale).astype(np.float32) + shift).astype(np.float32)
        if a.relu:
            y = np.where(y < 0, np.float32(0), y)
        out = QuantizeAttrs(scale=a.dst_scale, zero_point=a.dst_zero_point, output_type=a.output_type)
        return Quantize.evaluate(out, [y])


def batch_norm_scale_shift(gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray, variance: np.ndarray,
                           epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """The per-channel (scale, shift) of a BatchNormInference, as its CPU kernels compute them:
    ``gamma / sqrt(variance + epsilon)`` and ``beta - mean * scale`` in double, rounded to f32."""
    g, b, m, v = (np.asarray(t, np.float32).astype(np.float64) for t in (gamma, beta, mean, variance))
    scale = g / np.sqrt(v + float(epsilon))
    shift = b - m * scale
    return scale.astype(np.float32), shift.astype(np.float32)
