"""LpPool: (sum over the window of |x|^p)^(1/p) = (AvgPool(|x|^p, padding counted) * k)^(1/p);
zero padding adds nothing to the sum, so counting it in the average only fixes the divisor.
With dilations (AvgPool has none) the window sums come from a convolution (see
:mod:`opforge_onnx.ops._window_sum`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import auto_pad, out, require_rank, scalar_like, spatial_attrs, translator
from opforge_onnx.ops._window_sum import window_sums

#: AvgPool's attribute name has a hyphen, so it can only be passed through a dict
_EXCLUDE_PAD_OFF: dict[str, Any] = {"exclude-pad": False}


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    n = require_rank(ctx, x) - 2
    attrs = spatial_attrs(ctx, n)
    kernel = list(ctx.get_attribute("kernel_shape"))
    p = float(ctx.get_attribute("p", 2))
    ceil = bool(int(ctx.get_attribute("ceil_mode", 0)))
    powered = out(ctx.op("Power", ctx.op("Abs", x), scalar_like(ctx, p, x)))
    dilations = attrs.pop("dilations")
    if any(d != 1 for d in dilations):
        if auto_pad(ctx) not in ("explicit", "valid"):
            raise ctx.error("dilations with auto_pad SAME_* are not supported")
        pb, pe = (attrs["pads_begin"], attrs["pads_end"]) if auto_pad(ctx) == "explicit" else ([0] * n, [0] * n)
        total, _ = window_sums(ctx, powered, kernel, attrs["strides"], dilations, pb, pe, ceil, None)
    else:
        avg = ctx.op("AvgPool", powered, kernel=kernel, auto_pad=auto_pad(ctx),
                     rounding_type="ceil" if ceil else "floor", **attrs, **_EXCLUDE_PAD_OFF)
        total = out(ctx.op("Multiply", avg, scalar_like(ctx, float(np.prod(kernel)), x)))
    return [ctx.op("Power", total, scalar_like(ctx, 1.0 / p, x))]


EXTENSION = translator("LpPool", convert)
