"""InstanceNormalization: MVN over the spatial axes, then per-channel scale and bias."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, require_rank, reshape_for_channel, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x, scale, bias = ctx.get_input(0), ctx.get_input(1), ctx.get_input(2)
    r = require_rank(ctx, x)
    eps = float(ctx.get_attribute("epsilon", 1e-5))
    y = ctx.op("MVN", x, i64(ctx, list(range(2, r))), normalize_variance=True, eps=eps, eps_mode="inside_sqrt")
    y = ctx.op("Multiply", y, reshape_for_channel(ctx, scale, r))
    return [ctx.op("Add", y, reshape_for_channel(ctx, bias, r))]


EXTENSION = translator("InstanceNormalization", convert)
