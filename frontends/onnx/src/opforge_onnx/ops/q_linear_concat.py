"""com.microsoft QLinearConcat (ONNX Runtime's QOperator format): inputs ``Y_scale, Y_zero_point``
then one ``X_i, X_i_scale, X_i_zero_point`` triple per tensor (the last zero point may be
omitted); quantize(Concat(dequantize(X_1), ..., dequantize(X_n)), axis) into Y's type. See
:mod:`opforge_onnx.ops._qlinear`; the CPU runs it as its int8 concatenation."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, out, translator
from opforge_onnx.ops._qlinear import MS_DOMAIN, dequantize, quantize, quantized, scale, zero_point


def convert(ctx: NodeContext) -> ConversionResult:
    if not ctx.has_attribute("axis"):
        raise ctx.error("the required attribute 'axis' is missing")
    if not ctx.has_input(1):
        raise ctx.error("input 1 (Y_zero_point) is missing; it gives the result's type")
    y_zp = zero_point(ctx, 1, "Y_zero_point", None)
    qtype = etype(ctx.get_input(1))
    n = ctx.get_input_size() - 2
    if n <= 0 or n % 3 == 1:
        raise ctx.error(f"takes Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples; got {n + 2} inputs")
    parts = []
    for k in range(2, n + 2, 3):
        x = quantized(ctx, k, f"X_{(k - 2) // 3}")
        parts.append(dequantize(ctx, x, scale(ctx, k + 1, f"X_{(k - 2) // 3}_scale"),
                                zero_point(ctx, k + 2, f"X_{(k - 2) // 3}_zero_point", etype(x))))
    y = out(ctx.op("Concat", *parts, axis=int(ctx.get_attribute("axis", dtype=int))))
    return [quantize(ctx, y, scale(ctx, 0, "Y_scale"), y_zp, qtype)]


EXTENSION = translator("QLinearConcat", convert, domain=MS_DOMAIN)
