"""Range: Range-4 with the output type of ``start``. ONNX says scalars, but exporters (and the
spec's own function bodies) pass 1-element tensors, which ONNX Runtime accepts: reshape them."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import etype, i64, out, rank, translator


def _scalar(ctx: NodeContext, v: Output) -> Output:
    if rank(v) == 0:
        return v
    return out(ctx.op("Reshape", v, i64(ctx, []), special_zero=False))


def convert(ctx: NodeContext) -> ConversionResult:
    s, e, d = (_scalar(ctx, ctx.get_input(i)) for i in range(3))
    return [ctx.op("Range", s, e, d, output_type=etype(s))]


EXTENSION = translator("Range", convert)
