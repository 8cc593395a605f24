"""DynamicQuantize: ONNX's DynamicQuantizeLinear as one node. Outputs y (u8, the input's shape),
the scale (f32 scalar) and the zero point (u8 scalar)::

    lo = min(min(x), 0), hi = max(max(x), 0)
    scale = hi == lo ? 1 : (hi - lo) / 255
    zero_point = round_half_even(clamp(0 - lo / scale, 0, 255))
    y = saturate(round_half_even(x / scale) + zero_point)

ONNX Runtime's answers where the ONNX function body has none: an all-zero tensor gets scale 1
(the body divides 0 by 0), NaN elements take no part in the min and max and quantize to 0, a
tensor of NaNs only has scale NaN and zero point 255. Made by ``opforge_cpu.passes.int8.dynamic``
from the frontend's inlined function body; run by csrc/kernels/dynamic_quantize.cpp."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.op import CostClass, InferContext, TensorSpec
from opforge.shape import PartialShape

from opforge_cpu.ops._cpu_op import CpuOp


def dynamic_quantize_params(x: np.ndarray) -> tuple[np.float32, np.uint8]:
    """The scale and zero point of ``x``, as the kernel computes them (f32 throughout)."""
    f = np.asarray(x, np.float32).reshape(-1)
    finite = f[~np.isnan(f)]
    if f.size and not finite.size:
        lo = hi = np.float32(np.nan)
    else:
        lo = np.float32(finite.min(initial=np.float32(0)))
        hi = np.float32(finite.max(initial=np.float32(0)))
    # std::min(lo, 0) and std::max(hi, 0): NaN stays NaN
    lo = lo if np.isnan(lo) or lo < 0 else np.float32(0)
    hi = hi if np.isnan(hi) or hi > 0 else np.float32(0)
    with np.errstate(all="ignore"):
        scale = np.float32(1) if hi == lo else np.float32(np.float32(hi - lo) / np.float32(255))
        z = np.float32(np.float32(0) - np.float32(lo / scale))
    z = np.float32(255) if np.isnan(z) else np.float32(min(max(z, np.float32(0)), np.float32(255)))
    return scale, np.uint8(np.rint(z))


class DynamicQuantize(CpuOp):
    type_name = "DynamicQuantize"
    cost_class = CostClass.REDUCING

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        if ctx.input_type(0) is not Type.f32:
            raise ctx.error(f"input 0 is {ctx.input_type(0).ir}, expected f32")
        return [TensorSpec(Type.u8, ctx.input_shape(0)), TensorSpec(Type.f32, PartialShape([])),
                TensorSpec(Type.u8, PartialShape([]))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(inputs[0], np.float32)
        scale, zp = dynamic_quantize_params(x)
        with np.errstate(all="ignore"):
            q = np.rint(x / scale)
        q = np.where(np.isnan(q), -np.inf, q) + np.float32(zp)  # NaN quantizes to the low end
        return [np.clip(q, 0, 255).astype(np.uint8), np.array(scale, np.float32), np.array(zp, np.uint8)]
