"""IntegerMatMul: ONNX's MatMulInteger of a u8/i8 source [..., M, K] with a per-tensor zero point
known at run time and constant zero-point-centred i8 weights [K, N]. Inputs: the source, the
weights, the zero point (u8/i8 scalar, when ``has_zero_point``), the scale (f32 scalar, when the
output is f32), the bias (f32 constant [N], when ``has_bias``). Output: the exact i32 sums
``sum_k (x - zp) * w`` (wrapping like NumPy's int32 matmul), or with ``output_type`` f32
``f32(sums) * scale [+ bias]``: quantize_dynamic's Cast + Mul epilogue (the integer converted
once, then one f32 product) and the Add after it (rounded again). Made by
``opforge_cpu.passes.int8.dynamic``; run by csrc/kernels/integer_mat_mul.cpp on oneDNN's int8
matmul."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from opforge.element_type import Type
from opforge.op import CostClass, InferContext, OpAttrs, TensorSpec
from opforge.shape import PartialShape

from opforge_cpu.ops._cpu_op import CpuOp


class IntegerMatMulAttrs(OpAttrs):
    has_zero_point: bool = False
    output_type: Literal["i32", "f32"] = "i32"
    has_bias: bool = False


class IntegerMatMul(CpuOp):
    type_name = "IntegerMatMul"
    Attrs = IntegerMatMulAttrs
    cost_class = CostClass.COMPUTE
    min_inputs = 2
    max_inputs = 5

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: IntegerMatMulAttrs = ctx.attrs  # type: ignore[assignment]
        if a.has_bias and a.output_type != "f32":
            raise ctx.error("a bias needs output_type f32")
        want = 2 + int(a.has_zero_point) + int(a.output_type == "f32") + int(a.has_bias)
        if ctx.num_inputs != want:
            raise ctx.error(f"has {ctx.num_inputs} inputs, expected {want}")
        if ctx.input_type(0) not in (Type.u8, Type.i8) or ctx.input_type(1) is not Type.i8:
            raise ctx.error(f"inputs are {ctx.input_type(0).ir} x {ctx.input_type(1).ir}, expected u8/i8 x i8")
        xs, ws = ctx.input_shape(0), ctx.input_shape(1)
        if not xs.is_static or not ws.is_static or len(ws.to_tuple()) not in (2, 3) or len(xs.to_tuple()) < 2:
            raise ctx.error(f"shapes {xs} x {ws}: expected static [..., M, K] x [K, N] or [B, M, K] x [B, K, N]")
        x, wb = xs.to_tuple(), ws.to_tuple()
        if len(wb) == 3 and (len(x) != 3 or x[0] != wb[0]):
            raise ctx.error(f"shapes {xs} x {ws}: [B, K, N] weights need a [B, M, K] source")
        w = wb[-2:]
        if x[-1] != w[0]:
            raise ctx.error(f"inner dimensions differ: {xs} x {ws}")
        if a.has_zero_point and ctx.input_type(2) not in (Type.u8, Type.i8):
            raise ctx.error("the zero point must be u8 or i8")
        scale = want - 1 - int(a.has_bias)
        if a.output_type == "f32" and ctx.input_type(scale) is not Type.f32:
            raise ctx.error("the scale must be f32")
        if a.has_bias:
            bs = ctx.input_shape(want - 1)
            if ctx.input_type(want - 1) is not Type.f32 or not bs.is_static or int(np.prod(bs.to_tuple())) != w[1]:
                raise ctx.error(f"the bias must be f32 with {w[1]} values")
        return [TensorSpec(Type.parse(a.output_type), PartialShape([*x[:-1], w[1]]))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0].astype(np.int64)
        if attrs.has_zero_point:
            x = x - np.int64(np.asarray(inputs[2]).reshape(-1)[0])
        acc = np.matmul(x, inputs[1].astype(np.int64)).astype(np.int32)  # modulo 2^32, as the kernel
        if attrs.output_type == "i32":
            return [acc]
        scale = np.float32(np.asarray(inputs[2 + int(attrs.has_zero_point)]).reshape(-1)[0])
        y = (acc.astype(np.float32) * scale).astype(np.float32)
        if attrs.has_bias:
            y = (y + np.asarray(inputs[-1], np.float32).reshape(-1)).astype(np.float32)
        return [y]
