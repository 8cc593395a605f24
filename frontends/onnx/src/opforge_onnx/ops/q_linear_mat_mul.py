"""QLinearMatMul: the exact i32 product of the centred operands, rescaled by
``a_scale * b_scale / y_scale`` (computed in the scales' type, as ONNX's reference does),
rounded half to even, shifted by y's zero point and saturated to y's integer type."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, out, translator
from opforge_onnx.ops._integer import centered, requantize


def convert(ctx: NodeContext) -> ConversionResult:
    a = centered(ctx, ctx.get_input(0), ctx.get_input(2), 2)
    b = centered(ctx, ctx.get_input(3), ctx.get_input(5))
    product = ctx.op("MatMul", a, b)
    scale = ctx.op("Divide", ctx.op("Multiply", ctx.get_input(1), ctx.get_input(4)), ctx.get_input(6),
                   m_pythondiv=False)
    zp = ctx.get_input(7)
    return [requantize(ctx, out(product), out(scale), zp, etype(zp))]


EXTENSION = translator("QLinearMatMul", convert)
