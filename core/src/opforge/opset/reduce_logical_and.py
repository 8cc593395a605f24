"""ReduceLogicalAnd-1: true where every element over ``axes`` is true (vacuously true if none)."""

from __future__ import annotations

import numpy as np

from opforge.opset._reduction import Reduction


class ReduceLogicalAnd(Reduction):
    type_name = "ReduceLogicalAnd"
    version = "opset1"
    accepts = "boolean"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.all(x, axis=axes, keepdims=True)
