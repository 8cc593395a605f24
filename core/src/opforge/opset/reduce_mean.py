"""ReduceMean-1: the arithmetic mean over ``axes``.

Integer means are the sum (accumulated in 64 bits) divided by the count, truncated toward zero as
C++ integer division does. A mean over no elements is NaN for floats (0 / 0) and 0 for integers.
"""

from __future__ import annotations

import numpy as np

from opforge.opset._reduction import Reduction, float_sum, is_float, reduced_count


class ReduceMean(Reduction):
    type_name = "ReduceMean"
    version = "opset1"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        n = reduced_count(x, axes)
        if is_float(x):
            with np.errstate(invalid="ignore"):
                return float_sum(x, axes) / n if n else np.full(_kept(x, axes), np.nan)
        wide = np.uint64 if x.dtype.kind == "u" else np.int64
        s = np.sum(x, axis=axes, keepdims=True, dtype=wide)
        if n == 0:
            return np.zeros_like(s)
        # C++ integer division truncates toward zero, where // floors: divide the magnitude.
        q = np.abs(s) // n
        return np.asarray(np.where(s < 0, -q, q))


def _kept(x: np.ndarray, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(x.shape))
