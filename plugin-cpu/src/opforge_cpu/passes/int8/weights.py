"""Recovering int8 weights from the f32 constants the frontend folded them into: exact or not at all."""

from __future__ import annotations

import numpy as np

#: max |q| of the symmetric int8 ranges quantizers use for weights: [-127, 127] (ONNX Runtime,
#: OpenVINO's NNCF), [-128, 127], and the 7-bit "reduce_range" ones
_WEIGHT_RANGES = (127.0, 128.0, 63.0, 64.0)
#: how far (relative to the channel's largest |w|) a weight may be from q * scale: f32 rounding of
#: the dequantized product and of the recovered scale stay below 2^-22; a weight that is not
#: int8 * scale misses by ~1/4 step (~2e-3 of the largest |w|)
_WEIGHT_TOLERANCE = 1e-6


def int8_weights(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``rows`` ([C_out, R] f32, one output channel per row) as int8 values times one scale per
    row, when that is exact (see ``opforge_cpu.passes.int8``); else None. Per-channel and per-tensor
    scales both come out: a row's scale is its own largest |w| or the tensor's, over the range."""
    if rows.size == 0 or rows.dtype != np.float32:
        return None
    w = rows.astype(np.float64)
    row_max = np.abs(w).max(axis=1)
    all_max = float(row_max.max())
    if all_max == 0.0:
        return None
    scale = np.zeros(len(w))
    q = np.zeros_like(w)
    todo = np.ones(len(w), bool)
    for peak in (row_max, np.full(len(w), all_max)):
        for k in _WEIGHT_RANGES:
            s = np.where(peak > 0, peak / k, 1.0)
            qq = np.rint(w / s[:, None])
            fits = (qq.max(axis=1) <= 127) & (qq.min(axis=1) >= -128)
            exact = np.abs(qq * s[:, None] - w).max(axis=1) <= _WEIGHT_TOLERANCE * np.maximum(row_max, 1e-30)
            take = todo & fits & exact
            scale[take] = s[take]
            q[take] = qq[take]
            todo &= ~take
    if todo.any():
        return None
    return q.astype(np.int8), scale.astype(np.float32)
