"""ReduceL1-4: the sum of absolute values over ``axes`` (integers wrap around)."""

from __future__ import annotations

import numpy as np

from opforge.opset._reduction import Reduction, reduce_sum


class ReduceL1(Reduction):
    type_name = "ReduceL1"
    version = "opset4"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return reduce_sum(np.abs(x), axes)
