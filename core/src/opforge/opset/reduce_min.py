"""ReduceMin-1: the minimum over ``axes``.

A NaN element makes the minimum NaN (as in ONNX Runtime; OpenVINO skips it); a minimum over no elements is
the largest value of the type (the running minimum's start value).
"""

from __future__ import annotations

import numpy as np

from opforge.opset._reduction import Reduction, running_extreme


class ReduceMin(Reduction):
    type_name = "ReduceMin"
    version = "opset1"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return running_extreme(x, axes, largest=False)
