"""Clip: min/max attributes before opset 11, optional inputs after. Clamp when the bounds are
constant floats; Maximum/Minimum otherwise (integers, run-time bounds)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import const_value, etype, out, scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    t = etype(x)
    lo: Output | None
    hi: Output | None
    if (ctx.get_opset_version() or 11) < 11:
        lo = scalar_like(ctx, ctx.get_attribute("min", float(np.finfo(np.float32).min)), x)
        hi = scalar_like(ctx, ctx.get_attribute("max", float(np.finfo(np.float32).max)), x)
    else:
        lo = ctx.get_input(1) if ctx.has_input(1) else None
        hi = ctx.get_input(2) if ctx.has_input(2) else None
    lo_v = const_value(lo) if lo is not None else None
    hi_v = const_value(hi) if hi is not None else None
    if t.is_float and (lo is None or lo_v is not None) and (hi is None or hi_v is not None):
        # ONNX: a missing bound is the type's lowest/largest finite value, so Clip(-inf) with no
        # min is lowest(), not -inf (as ONNX Runtime computes it)
        fmin = float(np.asarray(lo_v).reshape(-1)[0]) if lo_v is not None else float(ml_dtypes.finfo(t.np).min)
        fmax = float(np.asarray(hi_v).reshape(-1)[0]) if hi_v is not None else float(ml_dtypes.finfo(t.np).max)
        return [ctx.op("Clamp", x, min=fmin, max=fmax)]
    y = out(x)
    if lo is not None:
        y = out(ctx.op("Maximum", y, lo))
    if hi is not None:
        y = out(ctx.op("Minimum", y, hi))
    return [y]


EXTENSION = translator("Clip", convert)
