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

from typing import Any, ClassVar, Literal

import numpy as np
from opforge.element_type import Type
from opforge.op import InferContext, Op, TensorSpec
from opforge.opset.interpolate import Interpolate, InterpolateAttrs

from opforge_cpu.ops.dequantize import Dequantize, DequantizeAttrs
from opforge_cpu.ops.quantize import Quantize, QuantizeAttrs


class QuantizedInterpolateAttrs(InterpolateAttrs):
    src_scale: float
    src_zero_point: int = 0
    dst_scale: float
    dst_zero_point: int = 0
    output_type: Literal["u8", "i8"] = "u8"


class QuantizedInterpolate(Op):
    type_name = "QuantizedInterpolate"
    version = "opforge_cpu"
    Attrs = QuantizedInterpolateAttrs
    value_inputs = Interpolate.value_inputs
    min_inputs = Interpolate.min_inputs
    max_inputs = Interpolate.max_inputs
    cpu_internal: ClassVar[bool] = True

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: QuantizedInterpolateAttrs = ctx.attrs  # type: ignore[assignment]
        if ctx.input_type(0) not in (Type.u8, Type.i8):
            raise ctx.error(f"input 0 is {ctx.input_type(0).ir}, expected u8 or i8")
        if not all(s > 0 and np.isfinite(s) for s in (a.src_scale, a.dst_scale)):
            raise ctx.error(f"scales ({a.src_scale}, {a.dst_scale}) must be positive and finite")
        specs = [TensorSpec(Type.f32, ctx.input_shape(0))]
        specs += [TensorSpec(ctx.input_type(i), ctx.input_shape(i)) for i in range(1, ctx.num_inputs)]
        values = [None] + [ctx.input_value(i) for i in range(1, ctx.num_inputs)]
        spec = Interpolate.infer(InferContext(ctx.node_name, Interpolate, a, specs, values))[0]
        return [TensorSpec(Type.parse(a.output_type), spec.shape)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: QuantizedInterpolateAttrs = attrs
        x = Dequantize.evaluate(DequantizeAttrs(scale=a.src_scale, zero_point=a.src_zero_point), inputs[:1])[0]
        y = Interpolate.evaluate(a, [x, *inputs[1:]])[0]
        return Quantize.evaluate(QuantizeAttrs(scale=a.dst_scale, zero_point=a.dst_zero_point, output_type=a.output_type), [y])
