"""LpPool: (sum over the window of |x|^p)^(1/p) = (AvgPool(|x|^p, padding counted) * k)^(1/p);
zero padding adds nothing to the sum, so counting it in the average only fixes the divisor."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import auto_pad, require_rank, scalar_like, spatial_attrs, translator

#: AvgPool's attribute name has a hyphen, so it can only be passed through a dict
_EXCLUDE_PAD_OFF: dict[str, Any] = {"exclude-pad": False}


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    n = require_rank(ctx, x) - 2
    attrs = spatial_attrs(ctx, n)
    if any(d != 1 for d in attrs.pop("dilations")):
        raise ctx.error("dilations other than 1 are not supported")
    kernel = list(ctx.get_attribute("kernel_shape"))
    p = float(ctx.get_attribute("p", 2))
    powered = ctx.op("Power", ctx.op("Abs", x), scalar_like(ctx, p, x))
    avg = ctx.op("AvgPool", powered, kernel=kernel, auto_pad=auto_pad(ctx),
                 rounding_type="ceil" if int(ctx.get_attribute("ceil_mode", 0)) else "floor",
                 **attrs, **_EXCLUDE_PAD_OFF)
    total = ctx.op("Multiply", avg, scalar_like(ctx, float(np.prod(kernel)), x))
    return [ctx.op("Power", total, scalar_like(ctx, 1.0 / p, x))]


EXTENSION = translator("LpPool", convert)
