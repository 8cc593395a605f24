"""QuantizedConcat: a concatenation of u8/i8 tensors, each read through its own per-tensor
(de)quantization and written on the output's: DequantizeLinear of each input -> Concat ->
QuantizeLinear as one node, with the QDQ graph's arithmetic exactly (``(q - z_i) * s_i`` in f32,
divided by the output scale, rounded half to even, plus the output zero point, saturated).

An input with the output's scale, zero point and type is copied as it is; any other maps each of
its 256 values through a table. Made by ``opforge_cpu.passes.int8``; run by
csrc/kernels/quantized_concat.cpp (channels-last when the axis is the channels')."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from opforge.element_type import Type
from opforge.op import InferContext, OpAttrs, TensorSpec
from opforge.opset.concat import Concat, ConcatAttrs

from opforge_cpu.ops._cpu_op import ConcatenatingOp
from opforge_cpu.ops._quantized import check_int8_input
from opforge_cpu.ops.dequantize import Dequantize, DequantizeAttrs
from opforge_cpu.ops.quantize import Quantize, QuantizeAttrs


class QuantizedConcatAttrs(OpAttrs):
    axis: int
    #: one scale and zero point per input
    scales: list[float]
    zero_points: list[int]
    dst_scale: float
    dst_zero_point: int = 0
    output_type: Literal["u8", "i8"] = "u8"


class QuantizedConcat(ConcatenatingOp):
    type_name = "QuantizedConcat"
    Attrs = QuantizedConcatAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: QuantizedConcatAttrs = ctx.attrs  # type: ignore[assignment]
        if len(a.scales) != ctx.num_inputs or len(a.zero_points) != ctx.num_inputs:
            raise ctx.error(f"{len(a.scales)} scales and {len(a.zero_points)} zero points for {ctx.num_inputs} inputs, "
                            "expected one of each per input")
        if not all(s > 0 and np.isfinite(s) for s in [*a.scales, a.dst_scale]):
            raise ctx.error(f"scales {a.scales} and dst_scale {a.dst_scale} must be positive and finite")
        for i in range(ctx.num_inputs):
            check_int8_input(ctx, i)
        # the shape rule is Concat's, on f32 views of the inputs (their types may differ)
        specs = [TensorSpec(Type.f32, ctx.input_shape(i)) for i in range(ctx.num_inputs)]
        shape = Concat.infer(InferContext(ctx.node_name, Concat, ConcatAttrs(axis=a.axis), specs,
                                          [None] * ctx.num_inputs))[0].shape
        return [TensorSpec(Type.parse(a.output_type), shape)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: QuantizedConcatAttrs = attrs
        out = QuantizeAttrs(scale=a.dst_scale, zero_point=a.dst_zero_point, output_type=a.output_type)
        parts = [Quantize.evaluate(out, Dequantize.evaluate(DequantizeAttrs(scale=s, zero_point=z), [x]))[0]
                 for x, s, z in zip(inputs, a.scales, a.zero_points, strict=True)]
        return [np.concatenate(parts, axis=a.axis)]
