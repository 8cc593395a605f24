"""Dequantize: u8/i8 -> f32, ``(x - zero_point) * scale`` per tensor, the DequantizeLinear
decomposition (Convert, Subtract, Multiply) as one node. Made by ``opforge_cpu.passes.int8``
where a dequantized value is read by something other than a quantized op; run by
csrc/kernels/dequantize.cpp (one oneDNN reorder with a source scale and zero point)."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.op import InferContext, OpAttrs, TensorSpec

from opforge_cpu.ops._cpu_op import CpuOp


class DequantizeAttrs(OpAttrs):
    scale: float
    zero_point: int = 0


class Dequantize(CpuOp):
    type_name = "Dequantize"
    Attrs = DequantizeAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        if ctx.input_type(0) not in (Type.u8, Type.i8):
            raise ctx.error(f"input 0 is {ctx.input_type(0).ir}, expected u8 or i8")
        return [TensorSpec(Type.f32, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [((inputs[0].astype(np.float32) - np.float32(attrs.zero_point)) * np.float32(attrs.scale)).astype(np.float32)]
