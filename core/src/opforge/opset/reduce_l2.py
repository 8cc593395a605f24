"""ReduceL2-4: the square root of the sum of squares over ``axes``.

For integer tensors the root is truncated toward zero (C++ ``static_cast`` of ``std::sqrt``), as
OpenVINO computes it.
"""

from __future__ import annotations

import numpy as np

from opforge.opset._numeric_cast import float_to_integer
from opforge.opset._reduction import Reduction, is_float


class ReduceL2(Reduction):
    type_name = "ReduceL2"
    version = "opset4"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        v = x.astype(np.float64)
        root = np.sqrt(np.sum(v * v, axis=axes, keepdims=True))
        if is_float(x):
            return root
        return float_to_integer(root, x.dtype)
