"""AveragePool: AvgPool (exclude-pad is the negation of count_include_pad). AvgPool has no
dilations, and its ceil rounding keeps a last window that starts in the end padding, which ONNX
drops; those cases divide window sums by window counts instead (see
:mod:`opforge_onnx.ops._window_sum`)."""

from __future__ import annotations

from typing import Any

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import auto_pad, out, require_rank, spatial_attrs, translator
from opforge_onnx.ops._window_sum import ceil_differs, window_sums


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    n = require_rank(ctx, x) - 2
    attrs = spatial_attrs(ctx, n)
    kernel = list(ctx.get_attribute("kernel_shape"))
    ceil = bool(int(ctx.get_attribute("ceil_mode", 0)))
    count_pad = bool(int(ctx.get_attribute("count_include_pad", 0)))
    dilations = attrs.pop("dilations")
    explicit = auto_pad(ctx) == "explicit"
    odd_ceil = ceil and explicit and ceil_differs(out(x).partial_shape.dims[2:], kernel, attrs["strides"], dilations,
                                                  attrs["pads_begin"], attrs["pads_end"])
    if any(d != 1 for d in dilations) or odd_ceil:
        if auto_pad(ctx) not in ("explicit", "valid"):
            raise ctx.error("dilations with auto_pad SAME_* are not supported")
        pb, pe = (attrs["pads_begin"], attrs["pads_end"]) if auto_pad(ctx) == "explicit" else ([0] * n, [0] * n)
        total, count = window_sums(ctx, x, kernel, attrs["strides"], dilations, pb, pe, ceil, count_pad)
        return [ctx.op("Divide", total, count, m_pythondiv=False)]
    extra: dict[str, Any] = {"exclude-pad": not count_pad}
    return [ctx.op("AvgPool", x, kernel=kernel, auto_pad=auto_pad(ctx),
                   rounding_type="ceil" if ceil else "floor", **attrs, **extra)]


EXTENSION = translator("AveragePool", convert)
