"""ReduceMax-1: the maximum over ``axes``.

A NaN element makes the maximum NaN (as in ONNX Runtime; OpenVINO skips it); a maximum over no elements is
the lowest value of the type (the running maximum's start value).
"""

from __future__ import annotations

import numpy as np

from opforge.opset._reduction import Reduction, running_extreme


class ReduceMax(Reduction):
    type_name = "ReduceMax"
    version = "opset1"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return running_extreme(x, axes, largest=True)
