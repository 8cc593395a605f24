"""com.microsoft QLinearGlobalAveragePool (ONNX Runtime's QOperator format):
quantize(GlobalAveragePool(dequantize(X))). With ``channels_last`` = 1 the input is
N x D1 x ... x C: its bytes are moved to N x C x D1 x ... first and the result's back (exact
moves), so the pool is the standard one (and the CPU's int8 average pool over an image). See
:mod:`opforge_onnx.ops._qlinear`."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops import global_average_pool
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


def convert(ctx: NodeContext) -> ConversionResult:
    last = bool(int(ctx.get_attribute("channels_last", 0, dtype=int)))
    x = quantized(ctx, 0, "X")
    qtype = x.element_type
    xf = dequantize(ctx, channels_first(ctx, x, last), scale(ctx, 1, "x_scale"), zero_point(ctx, 2, "x_zero_point", qtype))
    y = float_op(ctx, global_average_pool.EXTENSION, [xf], {}, 1)
    q = quantize(ctx, y, scale(ctx, 3, "y_scale"), zero_point(ctx, 4, "y_zero_point", qtype), qtype)
    return [channels_back(ctx, q, last)]


EXTENSION = translator("QLinearGlobalAveragePool", convert, domain=MS_DOMAIN)
