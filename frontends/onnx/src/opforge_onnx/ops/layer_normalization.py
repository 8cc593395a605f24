"""LayerNormalization (opset 17): decomposed, because ONNX also returns Mean and InvStdDev.

Statistics are computed in ``stash_type`` precision (f32 by default) as the spec requires."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import etype, i64, norm_axis, out, require_rank, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x, scale = ctx.get_input(0), ctx.get_input(1)
    r = require_rank(ctx, x)
    axis = norm_axis(ctx, int(ctx.get_attribute("axis", -1)), r)
    eps = float(ctx.get_attribute("epsilon", 1e-5))
    t = etype(x)
    stash = Type.f64 if int(ctx.get_attribute("stash_type", 1)) == 11 else Type.f32
    xs = out(ctx.op("Convert", x, destination_type=stash)) if t != stash else out(x)
    axes = i64(ctx, list(range(axis, r)))
    mean = ctx.op("ReduceMean", xs, axes, keep_dims=True)
    d = ctx.op("Subtract", xs, mean)
    var = ctx.op("ReduceMean", ctx.op("Multiply", d, d), axes, keep_dims=True)
    std = ctx.op("Sqrt", ctx.op("Add", var, ctx.const(eps, stash)))
    inv = ctx.op("Divide", ctx.const(1.0, stash), std)
    norm = out(ctx.op("Multiply", d, inv))
    if t != stash:
        norm = out(ctx.op("Convert", norm, destination_type=t))
    y = ctx.op("Multiply", norm, scale)
    if ctx.has_input(2):
        y = ctx.op("Add", y, ctx.get_input(2))
    return [y, mean, inv]


EXTENSION = translator("LayerNormalization", convert)
