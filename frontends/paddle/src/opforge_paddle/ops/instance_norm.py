"""instance_norm (X, Scale, Bias -> Y, SavedMean, SavedVariance): normalise each sample's
channels over the spatial dims (MVN), then the per-channel affine part."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    r = rank(ctx, x, "input 'X'")
    y = ctx.op("MVN", x, i64(ctx, list(range(2, r))), normalize_variance=True,
               eps=float(ctx.get_attribute("epsilon", 1e-5)), eps_mode="inside_sqrt")
    per_channel = i64(ctx, [-1] + [1] * (r - 2))
    if ctx.has_input("Scale"):
        y = ctx.op("Multiply", y, ctx.op("Reshape", ctx.get_input("Scale"), per_channel, special_zero=False))
    if ctx.has_input("Bias"):
        y = ctx.op("Add", y, ctx.op("Reshape", ctx.get_input("Bias"), per_channel, special_zero=False))
    return {"Y": out(y)}


EXTENSION = translator("instance_norm", convert)

PIR = PirOp("instance_norm", "instance_norm", (Arg("X"), Arg("Scale"), Arg("Bias")), ("Y", "SavedMean", "SavedVariance"))
