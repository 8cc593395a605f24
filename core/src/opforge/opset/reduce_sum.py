"""ReduceSum-1: the sum over ``axes`` (integers wrap around; an empty reduction gives 0)."""

from __future__ import annotations

import numpy as np

from opforge.opset._reduction import Reduction, reduce_sum


class ReduceSum(Reduction):
    type_name = "ReduceSum"
    version = "opset1"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return reduce_sum(x, axes)
