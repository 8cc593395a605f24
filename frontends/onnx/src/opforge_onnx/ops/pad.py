"""Pad: Pad-12. Pads are an attribute before opset 11, an input after ([begins..., ends...]);
opset 18 adds an axes input that says which axes the pads are for. Pad-12 has no ``wrap`` mode
(opset 19): it is built from Gathers of wrapped-around indices (the input repeated around
itself, as ``numpy.pad(mode="wrap")`` does)."""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import const_value, i64, out, require_rank, shape_of, to_i64, translator

_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


def _wrap(ctx: NodeContext, x: Output, begin: Output, end: Output, r: int) -> Output:
    """Wrap padding as one Gather per axis of the indices ``(-begin .. dim + end) mod dim``:
    any pad size (several periods, or negative to crop), pads known only at run time too."""
    dims = shape_of(ctx, x)
    y = x
    for a in range(r):
        b = out(ctx.op("Gather", begin, i64(ctx, a), i64(ctx, 0), batch_dims=0))
        e = out(ctx.op("Gather", end, i64(ctx, a), i64(ctx, 0), batch_dims=0))
        if const_value(b) is not None and const_value(e) is not None and not const_value(b) and not const_value(e):
            continue
        d = out(ctx.op("Gather", dims, i64(ctx, a), i64(ctx, 0), batch_dims=0))
        idx = ctx.op("Range", ctx.op("Negative", b), ctx.op("Add", d, e), i64(ctx, 1), output_type=Type.i64)
        y = out(ctx.op("Gather", y, ctx.op("FloorMod", idx, d), i64(ctx, a), batch_dims=0))
    return y


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
            if mode == "wrap":
                return [_wrap(ctx, out(x), pb, pe, r)]
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
    if mode == "wrap":
        return [_wrap(ctx, out(x), begin, end, r)]
    if value is None:
        value = ctx.const(np.zeros((), out(x).element_type.np))
    return [ctx.op("Pad", x, begin, end, value, pad_mode=_MODES[mode])]


EXTENSION = translator("Pad", convert)
