"""com.microsoft QGemm (ONNX Runtime's QOperator format): inputs ``A, a_scale, a_zero_point, B,
b_scale, b_zero_point, [C], [y_scale, y_zero_point]``, attributes ``alpha``, ``transA``,
``transB``. Y = alpha * (A' - a_zp)(B' - b_zp) * a_scale * b_scale + C * (alpha * a_scale * b_scale):
C is an i32 bias on the accumulator's grid. b's scale and zero point may be per column (N).

* With ``y_scale`` and ``y_zero_point``: QLinearMatMul's integer form (see
  :mod:`opforge_onnx.ops.q_linear_mat_mul`): the exact i32 product of the centred operands plus
  C, requantized with ``alpha * a_scale * b_scale / y_scale`` into y_zero_point's type.
* Without either: f32 output, DequantizeLinear's form: ``dequantize(A) @ (alpha * dequantize(B))
  + f32(C) * alpha * a_scale * b_scale``, the constant weights and bias folded while converting.
* One without the other is refused (ONNX Runtime's answer for it is neither).

Both are forms the CPU's int8 pass turns into one QuantizedMatMul (u8/s8 output or f32); in the
f32 form it recovers the int8 weights from the folded constant, which is exact for symmetric
weights whose largest |q| is 127 per column or per tensor (ONNX Runtime's quantizer writes
those); other weights stay f32 there."""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import etype, i64, out, rank, translator
from opforge_onnx.ops._integer import centered, requantize
from opforge_onnx.ops._qlinear import MS_DOMAIN, dequantize, quantized, scale, zero_point


def _per_column(ctx: NodeContext, index: int, what: str, n: int | None, qtype: Type | None) -> Output | None:
    """b_scale (``qtype`` None: f32, required) or b_zero_point (of ``qtype``, optional): one value
    or one per column of B ([N])."""
    if not ctx.has_input(index):
        if qtype is None:
            raise ctx.error(f"input {index} ({what}) is missing")
        return None
    v = ctx.get_input(index)
    want = Type.f32 if qtype is None else qtype
    if etype(v) is not want:
        raise ctx.error(f"input {index} ({what}) is {etype(v)}; expected {want}")
    ps = v.partial_shape
    size = int(np.prod(ps.to_tuple(), dtype=np.int64)) if ps.is_static else None
    if rank(v) not in (0, 1) or size is None or (size != 1 and size != n):
        raise ctx.error(f"input {index} ({what}) must be one value or one per column of B ({n}), got shape {ps}")
    return v


def _along_rows(ctx: NodeContext, v: Output, trans_b: bool) -> Output:
    """A per-column vector [N] reshaped to [N, 1] to broadcast against B' stored as [N, K]."""
    if not trans_b or rank(v) == 0:
        return v
    return out(ctx.op("Reshape", v, i64(ctx, [-1, 1]), special_zero=False))


def convert(ctx: NodeContext) -> ConversionResult:
    a = quantized(ctx, 0, "A")
    b = quantized(ctx, 3, "B")
    for v, what in ((a, "A"), (b, "B")):
        if rank(v) != 2:
            raise ctx.error(f"{what} must be a matrix (rank 2), got rank {rank(v)}")
    trans_a = bool(int(ctx.get_attribute("transA", 0, dtype=int)))
    trans_b = bool(int(ctx.get_attribute("transB", 0, dtype=int)))
    alpha = float(ctx.get_attribute("alpha", 1.0, dtype=float))
    n = b.partial_shape.dims[0 if trans_b else 1]
    a_scale = scale(ctx, 1, "a_scale")
    a_zp = zero_point(ctx, 2, "a_zero_point", etype(a))
    b_scale = _per_column(ctx, 4, "b_scale", n, None)
    b_zp = _per_column(ctx, 5, "b_zero_point", n, etype(b))
    c = ctx.get_input(6) if ctx.has_input(6) else None
    if c is not None and etype(c) is not Type.i32:
        raise ctx.error(f"input 6 (C) is {etype(c)}; QGemm's C is an i32 bias (zero point 0, scale alpha * a_scale * b_scale)")
    if b_scale is None:  # (never: _per_column raises for a missing scale; this narrows the type)
        raise ctx.error("input 4 (b_scale) is missing")
    alpha_c = ctx.const(np.float32(alpha))
    if ctx.has_input(7) != ctx.has_input(8):
        # (ONNX Runtime 1.32 returns f32 acc * a_scale * b_scale / y_scale, unrounded, for a
        # y_scale alone: neither of the two results the op's description names)
        raise ctx.error("y_scale and y_zero_point come together (a quantized output) or not at all (f32 output)")
    if ctx.has_input(7):
        y_scale = scale(ctx, 7, "y_scale")
        y_zp = zero_point(ctx, 8, "y_zero_point", None)
        qtype = etype(y_zp) if y_zp is not None else etype(a)
        acc = out(ctx.op("MatMul", centered(ctx, a, a_zp),
                         centered(ctx, b, b_zp, 2 if trans_b else None), transpose_a=trans_a, transpose_b=trans_b))
        if c is not None:
            acc = out(ctx.op("Add", acc, c))
        a_s = a_scale if alpha == 1.0 else out(ctx.op("Multiply", a_scale, alpha_c))
        multiplier = ctx.op("Divide", ctx.op("Multiply", a_s, b_scale), y_scale, m_pythondiv=False)
        return [requantize(ctx, acc, out(multiplier), y_zp, qtype)]
    af = dequantize(ctx, a, a_scale, a_zp)
    bf = out(ctx.op("Convert", b, destination_type=Type.f32))
    if b_zp is not None:
        bf = out(ctx.op("Subtract", bf, _along_rows(ctx, out(ctx.op("Convert", b_zp, destination_type=Type.f32)), trans_b)))
    bf = out(ctx.op("Multiply", bf, _along_rows(ctx, b_scale, trans_b)))
    if alpha != 1.0:
        bf = out(ctx.op("Multiply", bf, alpha_c))
    y = out(ctx.op("MatMul", af, bf, transpose_a=trans_a, transpose_b=trans_b))
    if c is not None:
        c_scale = ctx.op("Multiply", ctx.op("Multiply", a_scale, alpha_c), b_scale)
        y = out(ctx.op("Add", y, ctx.op("Multiply", ctx.op("Convert", c, destination_type=Type.f32), c_scale)))
    return [y]


EXTENSION = translator("QGemm", convert, domain=MS_DOMAIN)
