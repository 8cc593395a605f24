"""Sliding-window geometry shared by convolutions and pooling: attribute checks, ``auto_pad``
resolution, output sizes, and padding arrays (negative padding crops)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from opforge.op import InferContext
from opforge.shape import Dim

AutoPad = Literal["explicit", "same_upper", "same_lower", "valid"]


def check_lengths(ctx: InferContext, n: int, what: str, **attrs: Sequence[int]) -> None:
    """Every spatial attribute has one value per spatial axis."""
    for name, values in attrs.items():
        if len(values) != n:
            raise ctx.error(
                f"attribute '{name}' has {len(values)} values {list(values)}, expected {n} for {what}"
            )


def check_positive(ctx: InferContext, **attrs: Sequence[int]) -> None:
    for name, values in attrs.items():
        if any(v <= 0 for v in values):
            raise ctx.error(f"attribute '{name}' is {list(values)}, expected positive values")


def dilated(k: int, d: int) -> int:
    return (k - 1) * d + 1


def same_pads(in_dim: int, k: int, s: int, d: int, mode: str) -> tuple[int, int]:
    """Padding that makes the output ``ceil(in / s)`` long; ``same_upper`` puts the odd element at
    the end, ``same_lower`` at the beginning."""
    out = -(-in_dim // s)
    total = max(0, (out - 1) * s + dilated(k, d) - in_dim)
    small = total // 2
    return (small, total - small) if mode == "same_upper" else (total - small, small)


def resolve_pads(
    in_dims: Sequence[Dim],
    kernel: Sequence[Dim],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads_begin: Sequence[int],
    pads_end: Sequence[int],
    auto_pad: str,
) -> tuple[list[Dim], list[Dim]]:
    """The padding actually applied per spatial axis (None where it depends on an unknown size)."""
    n = len(strides)
    if auto_pad == "explicit":
        return list(pads_begin), list(pads_end)
    if auto_pad == "valid":
        return [0] * n, [0] * n
    pb: list[Dim] = []
    pe: list[Dim] = []
    for i in range(n):
        size, k = in_dims[i], kernel[i]
        if size is None or k is None:
            pb.append(None)
            pe.append(None)
        else:
            b, e = same_pads(size, k, strides[i], dilations[i], auto_pad)
            pb.append(b)
            pe.append(e)
    return pb, pe


def window_count(
    ctx: InferContext, axis: int, size: Dim, k: Dim, s: int, d: int, pb: Dim, pe: Dim, ceil: bool = False
) -> Dim:
    """How many windows fit along one spatial axis (None when that depends on unknown sizes)."""
    if size is None or k is None or pb is None or pe is None:
        return None
    span = size + pb + pe - dilated(k, d)
    if span < 0:
        raise ctx.error(
            f"spatial axis {axis}: the padded data size {size} + {pb} + {pe} is smaller than the "
            f"dilated kernel size {dilated(k, d)}"
        )
    return (-(-span // s) if ceil else span // s) + 1


def pad_spatial(
    x: np.ndarray, n: int, begin: Sequence[int], end: Sequence[int], value: Any = 0
) -> np.ndarray:
    """Pad the last ``n`` axes of ``x`` with ``value``; negative amounts crop."""
    lead = x.ndim - n
    crop = [slice(None)] * lead + [
        slice(max(0, -b), x.shape[lead + i] - max(0, -e)) for i, (b, e) in enumerate(zip(begin, end))
    ]
    x = x[tuple(crop)]
    widths = [(0, 0)] * lead + [(max(0, b), max(0, e)) for b, e in zip(begin, end)]
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths, mode="constant", constant_values=value)
    return x


def window_slices(start: Sequence[int], count: Sequence[int], step: Sequence[int]) -> tuple[slice, ...]:
    """Per-axis slices that pick ``count`` elements from ``start`` every ``step``."""
    return tuple(slice(b, b + (c - 1) * s + 1, s) for b, c, s in zip(start, count, step))
