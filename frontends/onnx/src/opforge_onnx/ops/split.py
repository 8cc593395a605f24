"""Split: equal parts (Split) or given lengths (VariadicSplit). Lengths come from an attribute
before opset 13, an input after; opset 18's num_outputs makes the last part smaller if needed."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, norm_axis, out, require_rank, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    n_out = ctx.get_output_size()
    axis_v = int(ctx.get_attribute("axis", 0))
    axis = i64(ctx, axis_v)
    lengths = None
    if (ctx.get_opset_version() or 13) < 13:
        s = ctx.get_attribute("split", None)
        lengths = i64(ctx, list(s)) if s is not None else None
    elif ctx.has_input(1):
        lengths = to_i64(ctx, ctx.get_input(1))
    if lengths is None:
        num = int(ctx.get_attribute("num_outputs", n_out))
        dim = out(x).partial_shape[norm_axis(ctx, axis_v, require_rank(ctx, x))]
        if dim is not None and dim % num:
            chunk = -(-dim // num)
            parts = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
            node = ctx.op("VariadicSplit", x, axis, i64(ctx, parts))
        else:
            node = ctx.op("Split", x, axis, num_splits=num)
    else:
        node = ctx.op("VariadicSplit", x, axis, lengths)
    return node.outputs()


EXTENSION = translator("Split", convert)
