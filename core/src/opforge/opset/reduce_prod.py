"""ReduceProd-1: the product over ``axes`` (integers wrap around; an empty product is 1)."""

from __future__ import annotations

import numpy as np

from opforge.opset._reduction import Reduction, is_float


class ReduceProd(Reduction):
    type_name = "ReduceProd"
    version = "opset1"

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        if is_float(x):
            return np.prod(x.astype(np.float64), axis=axes, keepdims=True)
        return np.prod(x, axis=axes, keepdims=True, dtype=x.dtype)
