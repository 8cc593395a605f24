"""AveragePool: AvgPool (exclude-pad is the negation of count_include_pad)."""

from __future__ import annotations

from typing import Any

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import auto_pad, require_rank, spatial_attrs, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    n = require_rank(ctx, x) - 2
    attrs = spatial_attrs(ctx, n)
    if any(d != 1 for d in attrs.pop("dilations")):
        raise ctx.error("dilations other than 1 are not supported by AvgPool")
    kernel = list(ctx.get_attribute("kernel_shape"))
    extra: dict[str, Any] = {"exclude-pad": not bool(ctx.get_attribute("count_include_pad", 0))}
    return [ctx.op("AvgPool", x, kernel=kernel, auto_pad=auto_pad(ctx),
                   rounding_type="ceil" if int(ctx.get_attribute("ceil_mode", 0)) else "floor",
                   **attrs, **extra)]


EXTENSION = translator("AveragePool", convert)
