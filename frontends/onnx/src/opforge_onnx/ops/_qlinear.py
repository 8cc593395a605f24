"""Shared pieces of ONNX Runtime's ``com.microsoft`` quantized ops (QLinearAdd, QLinearMul,
QLinearGlobalAveragePool, QGemm, ...: what ``quantize_static(..., quant_format=QOperator)``
writes around the standard QLinearConv).

Each op is defined as "dequantize the u8/s8 inputs, apply the float op, quantize the result"
(ONNX Runtime's ContribOperators.md), so each is translated into exactly that QDQ form, with the
decompositions the standard translators write for DequantizeLinear (``(f32(q) - f32(z)) * s``)
and QuantizeLinear (``Convert(Clamp(Round_even(y / s) + z, lo, hi))``). Every device runs them in
f32, and the CPU's int8 planning pass (``opforge_cpu.passes.int8``) finds the same regions it
finds in a QDQ model and runs them on the integers.

The scales of these ops are per tensor (one f32 value), the zero points one value of the
quantized tensor's type (u8 or i8), absent meaning 0. Inputs that break that are refused with an
error naming the node and the input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Node, Output

from opforge_onnx.ops._helpers import etype, i64, out, rank, require_rank, translator

#: the domain ONNX Runtime's contrib ops live in
MS_DOMAIN = "com.microsoft"

#: the quantized types these ops take
QTYPES = (Type.u8, Type.i8)


def _one_value(ctx: NodeContext, v: Output, what: str) -> Output:
    """``v`` checked to hold one value (rank 0, or a static shape of size 1), as a rank-0 tensor
    (so that it never changes the rank of what it broadcasts against)."""
    ps = v.partial_shape
    if not ps.is_static or int(np.prod(ps.to_tuple(), dtype=np.int64)) != 1:
        raise ctx.error(f"{what} must be one value (per-tensor quantization), got shape {ps}")
    if rank(v) == 0:
        return v
    return out(ctx.op("Reshape", v, i64(ctx, []), special_zero=False))


def quantized(ctx: NodeContext, index: int, what: str) -> Output:
    """Input ``index``, a u8/i8 tensor."""
    if not ctx.has_input(index):
        raise ctx.error(f"input {index} ({what}) is missing")
    x = ctx.get_input(index)
    if etype(x) not in QTYPES:
        raise ctx.error(f"input {index} ({what}) is {etype(x)}; expected u8 or i8")
    return x


def scale(ctx: NodeContext, index: int, what: str) -> Output:
    """Input ``index``, a required per-tensor f32 scale."""
    if not ctx.has_input(index):
        raise ctx.error(f"input {index} ({what}) is missing; these ops need a scale for each quantized tensor")
    s = ctx.get_input(index)
    if etype(s) is not Type.f32:
        raise ctx.error(f"input {index} ({what}) is {etype(s)}; scales are f32")
    return _one_value(ctx, s, f"input {index} ({what})")


def zero_point(ctx: NodeContext, index: int, what: str, qtype: Type | None) -> Output | None:
    """Input ``index``, an optional per-tensor zero point of type ``qtype`` (any u8/i8 type when
    None); None when absent (zero)."""
    if not ctx.has_input(index):
        return None
    z = ctx.get_input(index)
    if etype(z) not in QTYPES or (qtype is not None and etype(z) is not qtype):
        want = str(qtype) if qtype is not None else "u8 or i8"
        raise ctx.error(f"input {index} ({what}) is {etype(z)}; expected {want}, the quantized tensor's type")
    return _one_value(ctx, z, f"input {index} ({what})")


def dequantize(ctx: NodeContext, x: Output, s: Output, z: Output | None) -> Output:
    """DequantizeLinear's decomposition: ``(f32(x) - f32(z)) * s``."""
    xf = out(ctx.op("Convert", x, destination_type=Type.f32))
    if z is not None:
        xf = out(ctx.op("Subtract", xf, ctx.op("Convert", z, destination_type=Type.f32)))
    return out(ctx.op("Multiply", xf, s))


def quantize(ctx: NodeContext, y: Output, s: Output, z: Output | None, qtype: Type) -> Output:
    """QuantizeLinear's decomposition: ``saturate(round_half_to_even(y / s) + z)`` into ``qtype``."""
    q = out(ctx.op("Round", ctx.op("Divide", y, s), mode="half_to_even"))
    if z is not None:
        q = out(ctx.op("Add", q, ctx.op("Convert", z, destination_type=Type.f32)))
    info = np.iinfo(qtype.np)
    q = out(ctx.op("Clamp", q, min=float(info.min), max=float(info.max)))
    return out(ctx.op("Convert", q, destination_type=qtype))


def dequantized_input(ctx: NodeContext, index: int, name: str) -> tuple[Output, Type]:
    """The u8/i8 tensor at ``index`` with its scale and zero point at ``index + 1`` and
    ``index + 2``, dequantized; and its type."""
    x = quantized(ctx, index, name)
    xf = dequantize(ctx, x, scale(ctx, index + 1, f"{name}_scale"),
                    zero_point(ctx, index + 2, f"{name}_zero_point", etype(x)))
    return xf, etype(x)


def quantized_output(ctx: NodeContext, y: Output, index: int, name: str, qtype: Type) -> Output:
    """``y`` quantized with the scale at ``index`` and the zero point at ``index + 1`` into
    ``qtype`` (the inputs' type, which the zero point must have too)."""
    return quantize(ctx, y, scale(ctx, index, f"{name}_scale"), zero_point(ctx, index + 1, f"{name}_zero_point", qtype),
                    qtype)


def float_op(ctx: NodeContext, ext: ConversionExtension, inputs: Sequence[Output], attributes: Mapping[str, Any],
             opset: int) -> Output:
    """The standard translator ``ext`` applied to f32 ``inputs`` (the dequantized tensors) with
    ``attributes`` at ONNX ``opset``: the float op of a quantized one, with every decomposition
    the standard op has (AveragePool's ceil-mode windows, Softmax's 2-D coercion before opset 13).
    Its errors name this node."""
    inner = NodeContext(framework=ctx.framework, op_type=ctx.op_type, domain=ctx.domain, name=ctx.name,
                        inputs=list(inputs), attributes=dict(attributes), builder=ctx.builder,
                        output_names=ctx.get_output_names(), opset_version=opset, source=ctx.source)
    res = ext.convert(inner)
    first = res[0] if isinstance(res, Sequence) and res else None
    if not isinstance(first, (Output, Node)):
        raise ctx.error(f"{ext.describe()} gave no single output for the float op: {res!r}")
    return out(first)


def channels_first(ctx: NodeContext, x: Output, last: bool) -> Output:
    """An N x D1 x ... x C tensor moved to N x C x D1 x ... (``channels_last`` ops); ``x`` as it is
    otherwise. (A Transpose of the u8/i8 bytes: exact, and the CPU keeps it on the integers.)"""
    if not last:
        return x
    r = rank(x)
    if r is None or r < 3:
        raise ctx.error("channels_last needs an input of known rank >= 3 (N, spatial dims..., C)")
    return out(ctx.op("Transpose", x, i64(ctx, [0, r - 1, *range(1, r - 1)])))


def channels_back(ctx: NodeContext, y: Output, last: bool) -> Output:
    """The inverse of :func:`channels_first`."""
    if not last:
        return y
    r = require_rank(ctx, y, "the result")
    return out(ctx.op("Transpose", y, i64(ctx, [0, *range(2, r), 1])))


def unary(op_type: str, fn: Callable[[NodeContext, Output], Output]) -> ConversionExtension:
    """A quantized op of one tensor ``X, X_scale, X_zero_point, Y_scale, Y_zero_point`` (the layout
    of QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearAveragePool, ...):
    quantize(fn(dequantize(X)))."""

    def convert(ctx: NodeContext) -> ConversionResult:
        xf, qtype = dequantized_input(ctx, 0, "X")
        return [quantized_output(ctx, fn(ctx, xf), 3, "Y", qtype)]

    convert.__qualname__ = f"convert_{op_type}"
    return translator(op_type, convert, domain=MS_DOMAIN)


def binary(op_type: str, target: str) -> ConversionExtension:
    """QLinearAdd / QLinearMul (``A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
    C_zero_point``, NumPy broadcasting): quantize(dequantize(A) target dequantize(B))."""

    def convert(ctx: NodeContext) -> ConversionResult:
        af, qtype = dequantized_input(ctx, 0, "A")
        bf, btype = dequantized_input(ctx, 3, "B")
        if btype is not qtype:
            raise ctx.error(f"A is {qtype} but B is {btype}; both operands and the result have one type")
        return [quantized_output(ctx, out(ctx.op(target, af, bf)), 6, "C", qtype)]

    convert.__qualname__ = f"convert_{op_type}"
    return translator(op_type, convert, domain=MS_DOMAIN)
