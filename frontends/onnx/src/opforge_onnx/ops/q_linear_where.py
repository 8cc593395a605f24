"""com.microsoft QLinearWhere (ONNX Runtime's QOperator format): inputs ``condition, X, x_scale,
x_zero_point, Y, y_scale, y_zero_point, z_scale, z_zero_point``;
quantize(Where(condition, dequantize(X), dequantize(Y))) into Z's type, NumPy broadcasting. See
:mod:`opforge_onnx.ops._qlinear`."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, out, translator
from opforge_onnx.ops._qlinear import MS_DOMAIN, dequantized_input, quantized_output


def convert(ctx: NodeContext) -> ConversionResult:
    if not ctx.has_input(0) or etype(ctx.get_input(0)) is not Type.boolean:
        got = etype(ctx.get_input(0)) if ctx.has_input(0) else "missing"
        raise ctx.error(f"input 0 (condition) must be a boolean tensor, got {got}")
    xf, qtype = dequantized_input(ctx, 1, "x")
    yf, ytype = dequantized_input(ctx, 4, "y")
    if ytype is not qtype:
        raise ctx.error(f"X is {qtype} but Y is {ytype}; both operands and the result have one type")
    z = out(ctx.op("Select", ctx.get_input(0), xf, yf, auto_broadcast="numpy"))
    return [quantized_output(ctx, z, 7, "z", qtype)]


EXTENSION = translator("QLinearWhere", convert, domain=MS_DOMAIN)
