"""strided_slice (Input -> Out): ``starts``/``ends``/``strides`` on ``axes`` (attributes or
tensors), then the ``decrease_axis`` dims squeezed away -> Slice."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, out, translator
from opforge_paddle.ops._shape_arg import int_vector
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("Input")
    axes = [int(a) for a in ctx.get_attribute("axes")]
    starts = int_vector(ctx, "starts", "StartsTensor", "StartsTensorList")
    ends = int_vector(ctx, "ends", "EndsTensor", "EndsTensorList")
    strides = int_vector(ctx, "strides", "StridesTensor", "StridesTensorList")
    r = ctx.op("Slice", x, starts, ends, strides, i64(ctx, axes))
    decrease = [int(a) for a in ctx.get_attribute("decrease_axis", []) or []]
    if decrease:
        r = ctx.op("Squeeze", r, i64(ctx, decrease))
    return {"Out": out(r)}


EXTENSION = translator("strided_slice", convert)

PIR = PirOp("strided_slice", "strided_slice", (
    Arg("Input"), Arg("StartsTensor", attr="starts"), Arg("EndsTensor", attr="ends"),
    Arg("StridesTensor", attr="strides")))
