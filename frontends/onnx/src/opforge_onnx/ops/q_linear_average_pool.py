"""com.microsoft QLinearAveragePool (ONNX Runtime's QOperator format): quantize(AveragePool(dequantize(X)))
with AveragePool's attributes (kernel_shape, strides, pads, auto_pad, ceil_mode,
count_include_pad), converted by the standard AveragePool translator. With ``channels_last`` = 1
the input is N x D1 x ... x C: its bytes are moved to channels-first and the result's back. See
:mod:`opforge_onnx.ops._qlinear`."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops import average_pool
from opforge_onnx.ops._helpers import translator
from opforge_onnx.ops._qlinear import (
    MS_DOMAIN,
    channels_back,
    channels_first,
    dequantize,
    float_op,
    quantize,
    quantized,
    scale,
    zero_point,
)

#: the attributes of AveragePool this op has
POOL_ATTRIBUTES = ("kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "count_include_pad")


def convert(ctx: NodeContext) -> ConversionResult:
    if not ctx.has_attribute("kernel_shape"):
        raise ctx.error("the required attribute 'kernel_shape' is missing")
    last = bool(int(ctx.get_attribute("channels_last", 0, dtype=int)))
    x = quantized(ctx, 0, "X")
    qtype = x.element_type
    xf = dequantize(ctx, channels_first(ctx, x, last), scale(ctx, 1, "x_scale"), zero_point(ctx, 2, "x_zero_point", qtype))
    attrs = {k: ctx.get_attribute(k) for k in POOL_ATTRIBUTES if ctx.has_attribute(k)}
    y = float_op(ctx, average_pool.EXTENSION, [xf], attrs, 19)
    q = quantize(ctx, y, scale(ctx, 3, "y_scale"), zero_point(ctx, 4, "y_zero_point", qtype), qtype)
    return [channels_back(ctx, q, last)]


EXTENSION = translator("QLinearAveragePool", convert, domain=MS_DOMAIN)
