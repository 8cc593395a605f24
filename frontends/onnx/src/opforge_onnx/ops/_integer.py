"""Shared pieces of the integer-arithmetic ops (MatMulInteger, ConvInteger, QLinearMatMul,
QLinearConv): operands widened to i32 with their zero point subtracted, so products and sums are
exact, and the requantization of an i32 accumulator."""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import i64, out, rank


def centered(ctx: NodeContext, x: Output, zero_point: Output | None, zp_axis_rank: int | None = None) -> Output:
    """``i32(x) - i32(zero_point)``. A per-row/per-channel zero point (a vector of more than one
    value) is reshaped to [n, 1, ...] with ``zp_axis_rank - 1`` trailing ones so it broadcasts
    along dimension ``-zp_axis_rank``."""
    xi = out(ctx.op("Convert", x, destination_type=Type.i32))
    if zero_point is None:
        return xi
    zp = out(ctx.op("Convert", zero_point, destination_type=Type.i32))
    ps = zp.partial_shape
    if zp_axis_rank is not None and rank(zp) == 1 and ps.dims[0] != 1:
        zp = out(ctx.op("Reshape", zp, i64(ctx, [-1] + [1] * (zp_axis_rank - 1)), special_zero=False))
    return out(ctx.op("Subtract", xi, zp))


def requantize(ctx: NodeContext, acc: Output, multiplier: Output, zero_point: Output | None, qtype: Type) -> Output:
    """``saturate(round_half_to_even(acc * multiplier) + zero_point)`` into ``qtype``: the i32
    accumulator rescaled in f64, as ONNX's reference does (NumPy promotes i32 * f32 to f64); in
    f32 a product near a rounding tie could round the other way."""
    work = Type.f64
    y = out(ctx.op("Multiply", ctx.op("Convert", acc, destination_type=work),
                   ctx.op("Convert", multiplier, destination_type=work)))
    y = out(ctx.op("Round", y, mode="half_to_even"))
    if zero_point is not None:
        y = out(ctx.op("Add", y, ctx.op("Convert", zero_point, destination_type=work)))
    info = np.iinfo(qtype.np)
    # saturate with Maximum/Minimum of f64 constants (exact bounds in the work type)
    y = out(ctx.op("Maximum", y, ctx.const(np.array(info.min, work.np))))
    y = out(ctx.op("Minimum", y, ctx.const(np.array(info.max, work.np))))
    return out(ctx.op("Convert", y, destination_type=qtype))
