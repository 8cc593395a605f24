"""Shared machinery of AdaptiveAvgPool and AdaptiveMaxPool: output bin ``i`` of an axis of size
``L`` pooled to ``O`` covers input ``[floor(i * L / O), ceil((i + 1) * L / O))``."""

from __future__ import annotations

import numpy as np

from opforge.op import InferContext
from opforge.opset._nn_util import check_integral, check_rank
from opforge.shape import Dim, PartialShape


def adaptive_output_shape(ctx: InferContext) -> PartialShape:
    check_rank(ctx, 0, "data", [3, 4, 5])
    check_rank(ctx, 1, "output_shape", [1])
    check_integral(ctx, 1, "output_shape")
    ds, os = ctx.input_shape(0), ctx.input_shape(1)
    n: int | None = ds.rank - 2 if ds.rank is not None else None
    if os.rank == 1 and os[0] is not None:
        if n is not None and os[0] != n:
            raise ctx.error(
                f"input 1 (output_shape) has {os[0]} elements, expected {n} (one per spatial axis of {ds})"
            )
        n = os[0]
    if n is None:
        return PartialShape.dynamic()
    d: list[Dim] = list(ds.dims) if ds.rank is not None else [None] * (n + 2)
    v = ctx.input_value(1)
    spatial: list[Dim] = [None] * n
    if v is not None:
        spatial = [int(s) for s in np.asarray(v).reshape(-1)]
        if any(s is not None and s <= 0 for s in spatial):
            raise ctx.error(f"input 1 (output_shape) is {spatial}, expected positive sizes")
    return PartialShape([d[0], d[1], *spatial])


def bins(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of each of the ``out`` bins over an axis of ``size``."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)
