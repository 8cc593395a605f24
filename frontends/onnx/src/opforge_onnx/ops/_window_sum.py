"""Sums over dilated pooling windows, for the pooling ops OpenVINO has no dilated form of
(AveragePool and LpPool with ``dilations``; AvgPool-14 has no dilations).

Every channel is pooled alike, so the input is folded to [N * C, 1, spatial...] and convolved
with a ones kernel of the pooling window (strides, dilations and pads as given); that needs no
static channel count. ``ceil_mode`` becomes extra end padding sized so the convolution yields the
ceil output size, where the last window still has to start inside the input or its begin
padding (ONNX's rule, PyTorch's too). The element counts an average divides by come from the
same convolution over a mask of ones: the input alone (``count_include_pad=0``) or the input with
its explicit padding (``count_include_pad=1``); the ceil-mode extra padding never counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import etype, i64, out, shape_of


def onnx_ceil_size(d: int, k: int, s: int, dil: int, pb: int, pe: int) -> int:
    """ONNX's ceil-mode output size: windows are counted rounding up, but the last one must start
    inside the input or its begin padding."""
    span = (k - 1) * dil + 1
    n = math.ceil((d + pb + pe - span) / s) + 1
    if (n - 1) * s >= d + pb:
        n -= 1
    return n


def plain_ceil_size(d: int, k: int, s: int, dil: int, pb: int, pe: int) -> int:
    """The ceil-mode output size without that rule (OpenVINO's ``rounding_type="ceil"``)."""
    return math.ceil((d + pb + pe - ((k - 1) * dil + 1)) / s) + 1


def ceil_extra(ctx: NodeContext, dims: Sequence[int | None], kernel: Sequence[int], strides: Sequence[int],
               dilations: Sequence[int], pb: Sequence[int], pe: Sequence[int]) -> list[int]:
    """End padding to add so floor-rounded windows give ONNX's ceil-mode output size (0 where the
    existing padding already gives it; never negative)."""
    extra = []
    for i, d in enumerate(dims):
        if d is None:
            raise ctx.error("this ceil_mode pooling needs static spatial dimensions")
        span = (kernel[i] - 1) * dilations[i] + 1
        n = onnx_ceil_size(d, kernel[i], strides[i], dilations[i], pb[i], pe[i])
        extra.append(max((n - 1) * strides[i] + span - (d + pb[i] + pe[i]), 0))
    return extra


def ceil_differs(dims: Sequence[int | None], kernel: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int], pb: Sequence[int], pe: Sequence[int]) -> bool:
    """Whether OpenVINO's ceil rounding would give another output size than ONNX's (static dims)."""
    return any(
        d is not None and onnx_ceil_size(d, kernel[i], strides[i], dilations[i], pb[i], pe[i])
        != plain_ceil_size(d, kernel[i], strides[i], dilations[i], pb[i], pe[i])
        for i, d in enumerate(dims)
    )


def window_sums(ctx: NodeContext, x: Output, kernel: Sequence[int], strides: Sequence[int],
                dilations: Sequence[int], pb: Sequence[int], pe: Sequence[int], ceil: bool,
                count_pad: bool | None) -> tuple[Output, Output | None]:
    """(sum of each window, number of elements it averages over or None when ``count_pad`` is
    None), both shaped like the pooled output."""
    ps = x.partial_shape
    n = len(kernel)
    extra = ceil_extra(ctx, ps.dims[2:], kernel, strides, dilations, pb, pe) if ceil else [0] * n
    t = etype(x)
    dims = shape_of(ctx, x)
    spatial = ctx.op("Slice", dims, i64(ctx, [2]), i64(ctx, [2 + n]), i64(ctx, [1]))
    folded_shape = ctx.op("Concat", i64(ctx, [-1, 1]), spatial, axis=0)
    folded = ctx.op("Reshape", x, folded_shape, special_zero=False)
    ones = ctx.const(np.ones((1, 1, *kernel), t.np))
    conv: dict[str, Any] = {"strides": list(strides), "dilations": list(dilations), "auto_pad": "explicit"}
    total = ctx.op("Convolution", folded, ones, pads_begin=list(pb),
                   pads_end=[e + x_ for e, x_ in zip(pe, extra)], **conv)
    head = ctx.op("Slice", dims, i64(ctx, [0]), i64(ctx, [2]), i64(ctx, [1]))
    out_spatial = ctx.op("Slice", ctx.op("ShapeOf", total, output_type=Type.i64), i64(ctx, [2]), i64(ctx, [2 + n]),
                         i64(ctx, [1]))
    out_shape = ctx.op("Concat", head, out_spatial, axis=0)
    summed = out(ctx.op("Reshape", total, out_shape, special_zero=False))
    if count_pad is None:
        return summed, None
    one = ctx.const(np.ones((), t.np))
    mask = out(ctx.op("Broadcast", one, ctx.op("Concat", i64(ctx, [1, 1]), spatial, axis=0), mode="numpy"))
    if count_pad:
        mask = out(ctx.op("Pad", mask, i64(ctx, [0, 0, *pb]), i64(ctx, [0, 0, *pe]), one, pad_mode="constant"))
        begin, end = [0] * n, list(extra)
    else:
        begin, end = list(pb), [e + x_ for e, x_ in zip(pe, extra)]
    count = out(ctx.op("Convolution", mask, ones, pads_begin=begin, pads_end=end, **conv))
    return summed, count
