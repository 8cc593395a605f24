"""ReduceMax-1: the maximum over ``axes``.

NaN elements are skipped, as OpenVINO's running ``max`` skips them; a maximum over no elements is
the lowest value of the type (the running maximum's start value).
"""

from __future__ import annotations

import numpy as np

from opforge.opset._numeric_cast import finfo
from opforge.opset._reduction import Reduction, is_float


class ReduceMax(Reduction):
    type_name = "ReduceMax"
    version = "opset1"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        if is_float(x):
            start = float(finfo(x.dtype).min)
            return np.fmax.reduce(x.astype(np.float64), axis=axes, keepdims=True, initial=start)
        return np.max(x, axis=axes, keepdims=True, initial=np.iinfo(x.dtype).min)
