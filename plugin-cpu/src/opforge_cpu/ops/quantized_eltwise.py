"""QuantizedEltwise: Add, Subtract or Multiply of two u8/i8 tensors (NumPy broadcasting), each
read through its own per-tensor (de)quantization, the result written on the output's grid:
DequantizeLinear of both -> the op -> QuantizeLinear as one node, with the QDQ graph's f32
arithmetic exactly. Made by ``opforge_cpu.passes.int8`` (a SiLU's ``x * sigmoid(x)``, a
squeeze-excitation's per-channel product, an Add no convolution took as its sum); run by
csrc/kernels/quantized_eltwise.cpp."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from opforge.element_type import Type
from opforge.op import InferContext, OpAttrs, TensorSpec
from opforge.opset._shape_util import ShapeError, numpy_broadcast

from opforge_cpu.ops._cpu_op import CpuOp
from opforge_cpu.ops._quantized import check_int8_input, check_scales
from opforge_cpu.ops.dequantize import Dequantize, DequantizeAttrs
from opforge_cpu.ops.quantize import Quantize, QuantizeAttrs


class QuantizedEltwiseAttrs(OpAttrs):
    operation: Literal["Add", "Subtract", "Multiply"]
    a_scale: float
    a_zero_point: int = 0
    b_scale: float
    b_zero_point: int = 0
    dst_scale: float
    dst_zero_point: int = 0
    output_type: Literal["u8", "i8"] = "u8"


class QuantizedEltwise(CpuOp):
    type_name = "QuantizedEltwise"
    Attrs = QuantizedEltwiseAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: QuantizedEltwiseAttrs = ctx.attrs  # type: ignore[assignment]
        for i in (0, 1):
            check_int8_input(ctx, i)
        check_scales(ctx, a.a_scale, a.b_scale, a.dst_scale)
        try:
            shape = numpy_broadcast(ctx.input_shape(0), ctx.input_shape(1))
        except ShapeError as err:
            raise ctx.error(str(err)) from None
        return [TensorSpec(Type.parse(a.output_type), shape)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: QuantizedEltwiseAttrs = attrs
        x = Dequantize.evaluate(DequantizeAttrs(scale=a.a_scale, zero_point=a.a_zero_point), [inputs[0]])[0]
        y = Dequantize.evaluate(DequantizeAttrs(scale=a.b_scale, zero_point=a.b_zero_point), [inputs[1]])[0]
        r = {"Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply}[a.operation](x, y).astype(np.float32)
        out = QuantizeAttrs(scale=a.dst_scale, zero_point=a.dst_zero_point, output_type=a.output_type)
        return Quantize.evaluate(out, [r])
