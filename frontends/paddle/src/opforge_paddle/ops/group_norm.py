"""group_norm (X, Scale, Bias -> Y, Mean, Variance): normalise each of ``groups`` channel groups
per sample ([N, G, -1] then MVN), then the per-channel affine part."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import check_nchw, i64, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    check_nchw(ctx, "data_layout")
    x = ctx.get_input("X")
    r = rank(ctx, x, "input 'X'")
    groups = int(ctx.get_attribute("groups"))
    grouped = ctx.op("Reshape", x, i64(ctx, [0, groups, -1]), special_zero=True)
    norm = ctx.op("MVN", grouped, i64(ctx, [2]), normalize_variance=True,
                  eps=float(ctx.get_attribute("epsilon", 1e-5)), eps_mode="inside_sqrt")
    y = ctx.op("Reshape", norm, ctx.op("ShapeOf", x, output_type=Type.i64), special_zero=False)
    per_channel = i64(ctx, [-1] + [1] * (r - 2))
    if ctx.has_input("Scale"):
        y = ctx.op("Multiply", y, ctx.op("Reshape", ctx.get_input("Scale"), per_channel, special_zero=False))
    if ctx.has_input("Bias"):
        y = ctx.op("Add", y, ctx.op("Reshape", ctx.get_input("Bias"), per_channel, special_zero=False))
    return {"Y": out(y)}


EXTENSION = translator("group_norm", convert)

PIR = PirOp("group_norm", "group_norm", (Arg("X"), Arg("Scale"), Arg("Bias")), ("Y", "Mean", "Variance"),
            {"data_format": "data_layout"})
