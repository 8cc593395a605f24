"""ReduceMin-1: the minimum over ``axes``.

NaN elements are skipped, as OpenVINO's running ``min`` skips them; a minimum over no elements is
the largest value of the type (the running minimum's start value).
"""

from __future__ import annotations

import numpy as np

from opforge.opset._numeric_cast import finfo
from opforge.opset._reduction import Reduction, is_float


class ReduceMin(Reduction):
    type_name = "ReduceMin"
    version = "opset1"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        if is_float(x):
            start = float(finfo(x.dtype).max)
            return np.fmin.reduce(x.astype(np.float64), axis=axes, keepdims=True, initial=start)
        return np.min(x, axis=axes, keepdims=True, initial=np.iinfo(x.dtype).max)
