"""layer_norm (X, Scale, Bias -> Y, Mean, Variance): normalise dims begin_norm_axis.. with MVN,
then the affine part; Scale and Bias are stored flattened over the normalised dims."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, norm_axis, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    r = rank(ctx, x, "input 'X'")
    begin = norm_axis(ctx, int(ctx.get_attribute("begin_norm_axis", 1)), r)
    axes = list(range(begin, r))
    y = ctx.op("MVN", x, i64(ctx, axes), normalize_variance=True,
               eps=float(ctx.get_attribute("epsilon", 1e-5)), eps_mode="inside_sqrt")
    tail = x.partial_shape.dims[begin:]
    # [-1] when the normalised dims are one, else their (static) sizes
    shape = [int(d) if d is not None else -1 for d in tail] if len(tail) > 1 else [-1]
    if ctx.has_input("Scale"):
        y = ctx.op("Multiply", y, ctx.op("Reshape", ctx.get_input("Scale"), i64(ctx, shape), special_zero=False))
    if ctx.has_input("Bias"):
        y = ctx.op("Add", y, ctx.op("Reshape", ctx.get_input("Bias"), i64(ctx, shape), special_zero=False))
    return {"Y": out(y)}


EXTENSION = translator("layer_norm", convert)

PIR = PirOp("layer_norm", "layer_norm", (Arg("X"), Arg("Scale"), Arg("Bias")), ("Y", "Mean", "Variance"))
