"""Integer-vector arguments that Paddle gives as a tensor, a list of scalar tensors or an attribute."""

from __future__ import annotations

from collections.abc import Sequence

from opforge.element_type import Type
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_paddle.ops._helpers import etype, i64, out


def int_vector(ctx: NodeContext, attr: str, tensor: str, tensor_list: str, default: Sequence[int] | None = None) -> Output:
    """An i64 vector from ``tensor_list`` (scalars), ``tensor``, or the attribute, in Paddle's priority order."""
    if ctx.get_input_size(tensor_list):
        parts = [ctx.op("Reshape", ctx.get_input(tensor_list, i), i64(ctx, [1]), special_zero=False)
                 for i in range(ctx.get_input_size(tensor_list))]
        parts = [p if etype(p) is Type.i64 else ctx.op("Convert", p, destination_type=Type.i64) for p in parts]
        return out(ctx.op("Concat", *parts, axis=0))
    if ctx.has_input(tensor):
        t = ctx.get_input(tensor)
        return t if etype(t) is Type.i64 else out(ctx.op("Convert", t, destination_type=Type.i64))
    value = ctx.get_attribute(attr, default)
    if value is None:
        raise ctx.error(f"has no attribute '{attr}' and no input '{tensor}'")
    return i64(ctx, [int(v) for v in value])
