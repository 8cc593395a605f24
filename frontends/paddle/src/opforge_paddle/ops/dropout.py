"""dropout (X -> Out, Mask) at inference: identity, or x * (1 - p) for ``downgrade_in_infer``."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import const_input, out, scalar_like, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    mode = str(ctx.get_attribute("dropout_implementation", "downgrade_in_infer"))
    if mode == "upscale_in_train":
        return {"Out": x}
    p = float(ctx.get_attribute("dropout_prob", 0.5))
    if ctx.get_input_size("DropoutProbTensor"):
        value = const_input(ctx, "DropoutProbTensor")
        if value is None:
            raise ctx.error("the dropout probability (input 'DropoutProbTensor') must be a constant while converting")
        p = float(value[0])
    return {"Out": out(ctx.op("Multiply", x, scalar_like(ctx, 1.0 - p, x)))}


EXTENSION = translator("dropout", convert)

PIR = PirOp("dropout", "dropout", (Arg("X"), Arg("Seed"), Arg("DropoutProbTensor", attr="dropout_prob", scalar=True)),
            ("Out", "Mask"), {"mode": "dropout_implementation"})
