"""p_norm (X -> Out): the ``porder``-norm along ``axis`` (over everything with ``asvector``):
ReduceL1 / ReduceL2, max / min of |x| for +-inf, the count of non-zeros for 0, else
(sum |x|^p)^(1/p)."""

from __future__ import annotations

import math

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import etype, i64, norm_axis, out, rank, scalar_like, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    r = rank(ctx, x, "input 'X'")
    p = float(ctx.get_attribute("porder", 2.0))
    keep = bool(ctx.get_attribute("keepdim", False))
    axes = list(range(r)) if bool(ctx.get_attribute("asvector", False)) else [
        norm_axis(ctx, int(ctx.get_attribute("axis", -1)), r)]
    ax = i64(ctx, axes)
    if p == 2.0:
        return {"Out": out(ctx.op("ReduceL2", x, ax, keep_dims=keep))}
    if p == 1.0:
        return {"Out": out(ctx.op("ReduceL1", x, ax, keep_dims=keep))}
    a = ctx.op("Abs", x)
    if math.isinf(p):
        return {"Out": out(ctx.op("ReduceMax" if p > 0 else "ReduceMin", a, ax, keep_dims=keep))}
    if p == 0.0:
        nz = ctx.op("Convert", ctx.op("NotEqual", x, scalar_like(ctx, 0.0, x)), destination_type=etype(x))
        return {"Out": out(ctx.op("ReduceSum", nz, ax, keep_dims=keep))}
    s = ctx.op("ReduceSum", ctx.op("Power", a, scalar_like(ctx, p, x)), ax, keep_dims=keep)
    return {"Out": out(ctx.op("Power", s, scalar_like(ctx, 1.0 / p, x)))}


EXTENSION = translator("p_norm", convert)

PIR = unary("p_norm")
