"""Shared machinery of MaxPool and AvgPool: attribute checks, output shapes and window views."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opforge.op import InferContext
from opforge.opset._window import check_lengths, check_positive, dilated, resolve_pads, window_count
from opforge.shape import Dim, PartialShape


def pool_spatial_rank(ctx: InferContext, kernel: Sequence[int]) -> int:
    """The number of spatial axes: from the data rank (3 to 5) or, for dynamic rank, the kernel."""
    rank = ctx.input_shape(0).rank
    if rank is None:
        return len(kernel)
    if not 3 <= rank <= 5:
        raise ctx.error(f"input 0 (data) has rank {rank}, expected 3, 4 or 5 ([N, C, spatial...])")
    return rank - 2


def pool_output_shape(
    ctx: InferContext,
    kernel: list[int],
    strides: list[int],
    dilations: list[int],
    pads_begin: list[int],
    pads_end: list[int],
    auto_pad: str,
    rounding_type: str,
) -> PartialShape:
    n = pool_spatial_rank(ctx, kernel)
    what = f"{n}-D pooling"
    lengths: dict[str, Sequence[int]] = {"kernel": kernel, "strides": strides, "dilations": dilations}
    if auto_pad == "explicit":
        lengths.update(pads_begin=pads_begin, pads_end=pads_end)
    check_lengths(ctx, n, what, **lengths)
    check_positive(ctx, kernel=kernel, strides=strides, dilations=dilations)
    if auto_pad == "explicit" and any(p < 0 for p in [*pads_begin, *pads_end]):
        raise ctx.error(f"pads_begin {pads_begin} and pads_end {pads_end} must not be negative")
    ds = ctx.input_shape(0)
    d: list[Dim] = list(ds.dims) if ds.rank is not None else [None] * (n + 2)
    pb, pe = resolve_pads(d[2:], kernel, strides, dilations, pads_begin, pads_end, auto_pad)
    ceil = rounding_type == "ceil"
    out = [
        window_count(ctx, i, d[2 + i], kernel[i], strides[i], dilations[i], pb[i], pe[i], ceil)
        for i in range(n)
    ]
    return PartialShape([d[0], d[1], *out])


def pool_geometry(
    in_dims: Sequence[int],
    kernel: list[int],
    strides: list[int],
    dilations: list[int],
    pads_begin: list[int],
    pads_end: list[int],
    auto_pad: str,
    rounding_type: str,
) -> tuple[list[int], list[int], list[int]]:
    """(pads_begin, pads_end, output sizes) for static input sizes."""
    pb, pe = resolve_pads(in_dims, kernel, strides, dilations, pads_begin, pads_end, auto_pad)
    # Static sizes give static pads.
    begin = [p for p in pb if p is not None]
    end = [p for p in pe if p is not None]
    out = []
    for i, size in enumerate(in_dims):
        span = size + begin[i] + end[i] - dilated(kernel[i], dilations[i])
        out.append((-(-span // strides[i]) if rounding_type == "ceil" else span // strides[i]) + 1)
    return begin, end, out


def padded_windows(
    x: np.ndarray,
    kernel: list[int],
    strides: list[int],
    dilations: list[int],
    begin: list[int],
    out: list[int],
    value: Any,
) -> np.ndarray:
    """View [N, C, out..., kernel...] of the windows over ``x`` padded with ``value``: ``begin``
    in front, and at the end as much as the last window reaches (ceil rounding may reach past
    pads_end)."""
    n = len(kernel)
    widths = [(0, 0), (0, 0)]
    for i in range(n):
        reach = (out[i] - 1) * strides[i] + dilated(kernel[i], dilations[i])
        widths.append((begin[i], max(0, reach - begin[i] - x.shape[2 + i])))
    xp = np.pad(x, widths, mode="constant", constant_values=value)
    sp = xp.strides[2:]
    return np.lib.stride_tricks.as_strided(
        xp,
        shape=(*xp.shape[:2], *out, *kernel),
        strides=(
            *xp.strides[:2],
            *(sp[i] * strides[i] for i in range(n)),
            *(sp[i] * dilations[i] for i in range(n)),
        ),
        writeable=False,
    )
