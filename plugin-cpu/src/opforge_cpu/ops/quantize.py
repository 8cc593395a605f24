"""Quantize: f32 -> u8/i8, ``saturate(round_half_to_even(x / scale) + zero_point)`` per tensor,
the QuantizeLinear decomposition (Divide, Round, Add, Clamp, Convert) as one node. Made by
``opforge_cpu.passes.int8`` where no quantized op absorbed it; run by csrc/kernels/quantize.cpp
(one oneDNN reorder with a destination scale and zero point)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from opforge.element_type import Type
from opforge.op import InferContext, OpAttrs, TensorSpec

from opforge_cpu.ops._cpu_op import CpuOp


class QuantizeAttrs(OpAttrs):
    scale: float
    zero_point: int = 0
    output_type: Literal["u8", "i8"] = "u8"


class Quantize(CpuOp):
    type_name = "Quantize"
    Attrs = QuantizeAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        if ctx.input_type(0) is not Type.f32:
            raise ctx.error(f"input 0 is {ctx.input_type(0).ir}, expected f32")
        return [TensorSpec(Type.parse(ctx.attrs.output_type), ctx.input_shape(0))]  # type: ignore[attr-defined]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        t = np.dtype(np.uint8 if attrs.output_type == "u8" else np.int8)
        info = np.iinfo(t)
        q = np.rint(inputs[0].astype(np.float32) / np.float32(attrs.scale)) + attrs.zero_point
        return [np.clip(q, info.min, info.max).astype(t)]
