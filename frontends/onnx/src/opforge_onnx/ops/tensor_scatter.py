"""TensorScatter (opset 24, a KV-cache update): ScatterElementsUpdate along ``axis`` (default -2)
of ``update`` into ``past_cache``, batch element b written from ``write_indices[b]`` (0 when
absent) on, wrapping around the cache length with ``mode="circular"``."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, norm_axis, out, require_rank, shape_of, to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    cache, update = ctx.get_input(0), ctx.get_input(1)
    r = require_rank(ctx, cache)
    axis = norm_axis(ctx, int(ctx.get_attribute("axis", -2)), r)
    if axis == 0:
        raise ctx.error("axis must not be the batch axis 0")
    mode = str(ctx.get_attribute("mode", "linear"))
    if mode not in ("linear", "circular"):
        raise ctx.error(f"mode '{mode}' must be linear or circular")
    upd_dims = shape_of(ctx, update)
    seq = ctx.op("Gather", upd_dims, i64(ctx, axis), i64(ctx, 0), batch_dims=0)
    steps = ctx.op("Range", i64(ctx, 0), seq, i64(ctx, 1), output_type=Type.i64)
    steps = ctx.op("Reshape", steps, i64(ctx, [1] * axis + [-1] + [1] * (r - axis - 1)), special_zero=False)
    if ctx.has_input(2):
        start = ctx.op("Reshape", to_i64(ctx, ctx.get_input(2)), i64(ctx, [-1] + [1] * (r - 1)), special_zero=False)
        steps = ctx.op("Add", steps, start)
    if mode == "circular":
        length = ctx.op("Gather", shape_of(ctx, cache), i64(ctx, axis), i64(ctx, 0), batch_dims=0)
        steps = ctx.op("FloorMod", steps, length)
    idx = out(ctx.op("Broadcast", steps, upd_dims, mode="numpy"))
    return [ctx.op("ScatterElementsUpdate", cache, idx, update, i64(ctx, axis), reduction="none", use_init_val=True)]


EXTENSION = translator("TensorScatter", convert)
