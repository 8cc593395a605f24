"""ReduceLogicalOr-1: true where any element over ``axes`` is true (false if there are none)."""

from __future__ import annotations

import numpy as np

from opforge.opset._reduction import Reduction


class ReduceLogicalOr(Reduction):
    type_name = "ReduceLogicalOr"
    version = "opset1"
    accepts = "boolean"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.any(x, axis=axes, keepdims=True)
