"""batch_norm (X, Scale, Bias, Mean, Variance -> Y) in inference mode -> BatchNormInference."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import check_nchw, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    check_nchw(ctx, "data_layout")
    y = ctx.op("BatchNormInference", ctx.get_input("X"), ctx.get_input("Scale"), ctx.get_input("Bias"),
               ctx.get_input("Mean"), ctx.get_input("Variance"),
               epsilon=float(ctx.get_attribute("epsilon", 1e-5)))
    # MeanOut/VarianceOut are the running statistics, unchanged at inference.
    return {"Y": out(y), "MeanOut": ctx.get_input("Mean"), "VarianceOut": ctx.get_input("Variance")}


EXTENSION = translator("batch_norm", convert)

PIR = PirOp(
    "batch_norm", "batch_norm",
    (Arg("X"), Arg("Mean"), Arg("Variance"), Arg("Scale"), Arg("Bias")),
    ("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace"),
    {"data_format": "data_layout"},
)
