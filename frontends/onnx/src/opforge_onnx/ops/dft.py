"""DFT: DFT-7 / IDFT-7 / RDFT-9 / IRDFT-9 on ONNX's [..., 1 | 2] (real | complex) signals.

The axis is an attribute before opset 20 and an input after (then it may be computed at run
time, and a negative axis counts from the end of the whole input, trailing 1 or 2 included).
``onesided`` forward transforms of real input are RDFT; ``onesided`` inverse transforms are
IRDFT (a one-sided spectrum back to a real signal); others work on complex values, a real input
being given a zero imaginary part.
"""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import const_value, etype, i64, out, require_rank, to_i64, translator


def _axis(ctx: NodeContext, r: int) -> Output:
    """The transformed axis as a non-negative [1] i64 tensor."""
    if (ctx.get_opset_version() or 20) < 20:
        a = int(ctx.get_attribute("axis", 1))
        return i64(ctx, [a + r if a < 0 else a])
    if not ctx.has_input(2):
        return i64(ctx, [r - 2])
    v = to_i64(ctx, ctx.get_input(2))
    c = const_value(v)
    if c is not None:
        a = int(np.asarray(c).reshape(-1)[0])
        return i64(ctx, [a + r if a < 0 else a])
    v = out(ctx.op("Reshape", v, i64(ctx, [1]), special_zero=False))
    shifted = ctx.op("Add", v, i64(ctx, [r]))
    return out(ctx.op("Select", ctx.op("Less", v, i64(ctx, [0])), shifted, v))


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    r = require_rank(ctx, x)
    size = None
    if ctx.has_input(1):
        size = out(ctx.op("Reshape", to_i64(ctx, ctx.get_input(1)), i64(ctx, [1]), special_zero=False))
    return [spectrum(ctx, out(x), _axis(ctx, r), size, inverse=bool(int(ctx.get_attribute("inverse", 0))),
                     onesided=bool(int(ctx.get_attribute("onesided", 0))))]


def spectrum(ctx: NodeContext, x: Output, axes: Output, size: Output | None, *, inverse: bool,
             onesided: bool) -> Output:
    """The ONNX-layout transform of ``x`` [..., 1 | 2] along ``axes`` (a [1] i64 tensor of a
    non-negative axis), ``size`` the optional [1] signal length."""
    r = require_rank(ctx, x)
    last = x.partial_shape.dims[-1]
    if last not in (1, 2):
        raise ctx.error(f"the last dimension of the input must be 1 (real) or 2 (complex), got {last}")
    if last == 1 and not inverse and onesided:
        real = ctx.op("Squeeze", x, i64(ctx, [-1]))
        return out(ctx.op("RDFT", real, axes, size))
    if last == 2 and inverse and onesided:
        real_y = ctx.op("IRDFT", x, axes, size)
        return out(ctx.op("Unsqueeze", real_y, i64(ctx, [-1])))
    if last == 1:
        zero = ctx.const(np.zeros((), etype(x).np if etype(x) is not Type.dynamic else np.float32))
        x = out(ctx.op("Pad", x, i64(ctx, [0] * r), i64(ctx, [0] * (r - 1) + [1]), zero, pad_mode="constant"))
    y = out(ctx.op("IDFT" if inverse else "DFT", x, axes, size))
    if onesided:
        # a forward one-sided transform of a complex signal keeps n // 2 + 1 frequencies
        n = out(ctx.op("Gather", ctx.op("ShapeOf", y, output_type=Type.i64), axes, i64(ctx, 0), batch_dims=0))
        keep = ctx.op("Add", ctx.op("Divide", n, i64(ctx, [2]), m_pythondiv=True), i64(ctx, [1]))
        y = out(ctx.op("Slice", y, i64(ctx, [0]), keep, i64(ctx, [1]), axes))
    return y


EXTENSION = translator("DFT", convert)
