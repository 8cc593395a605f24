"""Shared machinery of BitwiseLeftShift and BitwiseRightShift.

OpenVINO leaves shift amounts outside ``[0, bit width)`` undefined; here they saturate, as ONNX's
BitShift-28 defines them: every bit is shifted out (0, or the sign for an arithmetic right
shift of a negative signed value).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class BitwiseShift(BinaryElementwise):
    accepts = "integral"
    left: bool = True

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        width = a.dtype.itemsize * 8
        shift = np.asarray(b).astype(np.int64)
        ok = (shift >= 0) & (shift < width)
        safe = np.where(ok, shift, 0).astype(a.dtype)
        if cls.left:
            return np.where(ok, np.left_shift(a, safe), 0)
        saturated = np.right_shift(a, np.asarray(width - 1, a.dtype)) if a.dtype.kind == "i" else np.zeros_like(a)
        return np.where(ok, np.right_shift(a, safe), saturated)
