"""IntegerConvolution: ONNX's ConvInteger (1-D or 2-D, ``group`` groups) of a u8/i8 source
[N, C, ...] with a per-tensor zero point known at run time and constant zero-point-centred i8
filters [O, C/group, k...]. Inputs: the source, the filters, the zero point (u8/i8 scalar, when
``has_zero_point``). Output: the exact i32 sums of ``(x - zp) * w`` over each window, the padding
reading 0 in the centred source (ConvInteger's rule), wrapping like NumPy's int32 arithmetic.
Made by ``opforge_cpu.passes.int8.dynamic``; run by csrc/kernels/integer_convolution.cpp (im2col
with the zero point in the padding, oneDNN's int8 matmul)."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.op import CostClass, InferContext, TensorSpec
from opforge.opset._conv import ConvolutionAttrs
from opforge.opset.convolution import Convolution
from opforge.shape import PartialShape

from opforge_cpu.ops._cpu_op import CpuOp


class IntegerConvolutionAttrs(ConvolutionAttrs):
    has_zero_point: bool = False
    #: groups of channels (filters [O, C/group, k...], as ONNX's ConvInteger)
    group: int = 1


def _conv_attrs(a: IntegerConvolutionAttrs) -> ConvolutionAttrs:
    return ConvolutionAttrs(strides=a.strides, pads_begin=a.pads_begin, pads_end=a.pads_end, dilations=a.dilations,
                            auto_pad=a.auto_pad)


class IntegerConvolution(CpuOp):
    type_name = "IntegerConvolution"
    Attrs = IntegerConvolutionAttrs
    cost_class = CostClass.COMPUTE
    min_inputs = 2
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: IntegerConvolutionAttrs = ctx.attrs  # type: ignore[assignment]
        if ctx.num_inputs != 2 + int(a.has_zero_point):
            raise ctx.error(f"has {ctx.num_inputs} inputs, expected {2 + int(a.has_zero_point)}")
        if ctx.input_type(0) not in (Type.u8, Type.i8) or ctx.input_type(1) is not Type.i8:
            raise ctx.error(f"inputs are {ctx.input_type(0).ir} x {ctx.input_type(1).ir}, expected u8/i8 x i8")
        if a.has_zero_point and ctx.input_type(2) not in (Type.u8, Type.i8):
            raise ctx.error("the zero point must be u8 or i8")
        xs, ws = ctx.input_shape(0), ctx.input_shape(1)
        if not xs.is_static or not ws.is_static or a.group < 1:
            raise ctx.error(f"shapes {xs}, {ws} (group {a.group}): expected static shapes")
        x, w = xs.to_tuple(), ws.to_tuple()
        if len(w) != len(x) or w[1] * a.group != x[1] or w[0] % a.group:
            raise ctx.error(f"filters {ws} do not fit the source {xs} in {a.group} groups")
        # the output's shape is an ungrouped convolution's with as many filters
        specs = [TensorSpec(Type.f32, xs), TensorSpec(Type.f32, PartialShape([w[0], x[1], *w[2:]]))]
        spec = Convolution.infer(InferContext(ctx.node_name, Convolution, _conv_attrs(a), specs, [None, None]))[0]
        return [TensorSpec(Type.i32, spec.shape)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0].astype(np.float64)
        if attrs.has_zero_point:
            x = x - float(np.asarray(inputs[2]).reshape(-1)[0])
        w = inputs[1].astype(np.float64)
        cg, og = w.shape[1], w.shape[0] // attrs.group
        # f64 holds every such sum exactly (|sum| < 2^53): the integer result
        y = np.concatenate([Convolution.evaluate(_conv_attrs(attrs), [x[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og]])[0]
                            for g in range(attrs.group)], axis=1)
        return [np.rint(y).astype(np.int64).astype(np.int32)]
