"""slice (Input -> Out): ``starts``/``ends`` on ``axes`` (attributes or tensors), then the
``decrease_axis`` dims are squeezed away."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_paddle.ops._helpers import etype, i64, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def _bound(ctx: NodeContext, attr: str, tensor: str, tensor_list: str) -> Output:
    if ctx.get_input_size(tensor_list):
        parts = [ctx.op("Reshape", ctx.get_input(tensor_list, i), i64(ctx, [1]), special_zero=False)
                 for i in range(ctx.get_input_size(tensor_list))]
        parts = [p if etype(p) is Type.i64 else ctx.op("Convert", p, destination_type=Type.i64) for p in parts]
        return out(ctx.op("Concat", *parts, axis=0))
    if ctx.has_input(tensor):
        t = ctx.get_input(tensor)
        return t if etype(t) is Type.i64 else out(ctx.op("Convert", t, destination_type=Type.i64))
    return i64(ctx, [int(v) for v in ctx.get_attribute(attr)])


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("Input")
    axes = [int(a) for a in ctx.get_attribute("axes")]
    starts = _bound(ctx, "starts", "StartsTensor", "StartsTensorList")
    ends = _bound(ctx, "ends", "EndsTensor", "EndsTensorList")
    r = ctx.op("Slice", x, starts, ends, i64(ctx, [1] * len(axes)), i64(ctx, axes))
    decrease = [int(a) for a in ctx.get_attribute("decrease_axis", [])]
    if decrease:
        r = ctx.op("Squeeze", r, i64(ctx, decrease))
    return {"Out": out(r)}


EXTENSION = translator("slice", convert)

PIR = PirOp("slice", "slice", (Arg("Input"), Arg("StartsTensor", attr="starts"), Arg("EndsTensor", attr="ends")))
