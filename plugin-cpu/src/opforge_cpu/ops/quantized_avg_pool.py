"""QuantizedAvgPool: average pooling of a u8/i8 tensor read through a per-tensor dequantization,
written on the output's grid: DequantizeLinear -> AvgPool (or a global average pool, ReduceMean
over the spatial axes) -> QuantizeLinear as one node. Made by ``opforge_cpu.passes.int8``
(Inception's and DenseNet's average pools, every squeeze-excitation's global one); run by
csrc/kernels/quantized_avg_pool.cpp, which sums the integers exactly, so the result differs from
the QDQ graph's (an f32 sum) only where the two round a value near a .5 tie differently.

The attributes are AvgPool's, plus the window's paddings resolved against the input (what a
padded cell counts for with and without ``exclude_pad``) and the scales and zero points."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from opforge.element_type import Type
from opforge.op import InferContext, Op, TensorSpec
from opforge.opset.avg_pool import AvgPool, AvgPoolAttrs

from opforge_cpu.ops.dequantize import Dequantize, DequantizeAttrs
from opforge_cpu.ops.quantize import Quantize, QuantizeAttrs


class QuantizedAvgPoolAttrs(AvgPoolAttrs):
    #: the paddings resolved for the static input (auto_pad applied), the reference's geometry
    window_begin: list[int]
    window_end: list[int]
    src_scale: float
    src_zero_point: int = 0
    dst_scale: float
    dst_zero_point: int = 0
    output_type: Literal["u8", "i8"] = "u8"


class QuantizedAvgPool(Op):
    type_name = "QuantizedAvgPool"
    version = "opforge_cpu"
    Attrs = QuantizedAvgPoolAttrs
    cpu_internal: ClassVar[bool] = True

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: QuantizedAvgPoolAttrs = ctx.attrs  # type: ignore[assignment]
        if ctx.input_type(0) not in (Type.u8, Type.i8):
            raise ctx.error(f"input 0 is {ctx.input_type(0).ir}, expected u8 or i8")
        if not all(s > 0 and np.isfinite(s) for s in (a.src_scale, a.dst_scale)):
            raise ctx.error(f"scales ({a.src_scale}, {a.dst_scale}) must be positive and finite")
        spec = AvgPool.infer(InferContext(ctx.node_name, AvgPool, a, [TensorSpec(Type.f32, ctx.input_shape(0))], [None]))[0]
        return [TensorSpec(Type.parse(a.output_type), spec.shape)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: QuantizedAvgPoolAttrs = attrs
        x = Dequantize.evaluate(DequantizeAttrs(scale=a.src_scale, zero_point=a.src_zero_point), inputs)[0]
        y = AvgPool.evaluate(a, [x])[0]
        return Quantize.evaluate(QuantizeAttrs(scale=a.dst_scale, zero_point=a.dst_zero_point, output_type=a.output_type), [y])
