"""Pad: Pad-12. Pads are an attribute before opset 11, an input after ([begins..., ends...]);
opset 18 adds an axes input that says which axes the pads are for."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, out, require_rank, to_i64, translator

_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge"}


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    mode = str(ctx.get_attribute("mode", "constant"))
    if mode not in _MODES:
        raise ctx.error(f"pad mode '{mode}' is not supported (supported: {', '.join(_MODES)})")
    r = require_rank(ctx, x)
    value = None
    if (ctx.get_opset_version() or 11) < 11:
        pads = np.asarray(ctx.get_attribute("pads", [0] * 2 * r), np.int64)
        v = float(ctx.get_attribute("value", 0.0))
        value = ctx.const(v, out(x).element_type)
    else:
        if ctx.has_input(2):
            value = ctx.op("Reshape", ctx.get_input(2), i64(ctx, []), special_zero=False).output(0)
        if not ctx.is_constant_input(1):
            # Pads computed at run time: split [begins..., ends...] with Slice, and scatter them
            # into per-axis vectors when an axes input says which axes they are for.
            p = to_i64(ctx, ctx.get_input(1))
            n = r
            axes_port = None
            if ctx.has_input(3):
                a_in = to_i64(ctx, ctx.get_input(3))
                a_shape = out(a_in).partial_shape
                if not a_shape.is_static:
                    raise ctx.error("the axes input needs a static shape")
                n = int(a_shape.to_tuple()[0]) if a_shape.rank else 1
                neg = ctx.op("Less", a_in, i64(ctx, 0))
                axes_port = out(ctx.op("Select", neg, ctx.op("Add", a_in, i64(ctx, r)), a_in))
            pb = out(ctx.op("Slice", p, i64(ctx, [0]), i64(ctx, [n]), i64(ctx, [1])))
            pe = out(ctx.op("Slice", p, i64(ctx, [n]), i64(ctx, [2 * n]), i64(ctx, [1])))
            if axes_port is not None:
                zeros = i64(ctx, np.zeros(r, np.int64))
                pb = out(ctx.op("ScatterElementsUpdate", zeros, axes_port, pb, i64(ctx, 0), reduction="none"))
                pe = out(ctx.op("ScatterElementsUpdate", zeros, axes_port, pe, i64(ctx, 0), reduction="none"))
            if value is None:
                value = ctx.const(np.zeros((), out(x).element_type.np))
            return [ctx.op("Pad", x, pb, pe, value, pad_mode=_MODES[mode])]
        pads = np.asarray(ctx.get_values_from_const_input(1), np.int64).reshape(-1)
        if ctx.has_input(3) and not ctx.is_constant_input(3):
            raise ctx.error("constant pads with run-time axes are not supported")
        if ctx.has_input(3):
            axes = [a + r if a < 0 else a for a in np.asarray(ctx.get_values_from_const_input(3)).reshape(-1)]
            full = np.zeros(2 * r, np.int64)
            n = len(axes)
            for j, a in enumerate(axes):
                full[a], full[r + a] = pads[j], pads[n + j]
            pads = full
    if pads.size != 2 * r:
        raise ctx.error(f"pads has {pads.size} values, expected {2 * r} for a rank-{r} input")
    begin, end = i64(ctx, pads[:r]), i64(ctx, pads[r:])
    if value is None:
        value = ctx.const(np.zeros((), out(x).element_type.np))
    return [ctx.op("Pad", x, begin, end, value, pad_mode=_MODES[mode])]


EXTENSION = translator("Pad", convert)
