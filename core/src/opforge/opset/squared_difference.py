"""SquaredDifference-1: (x - y) ** 2 with auto-broadcast (integers wrap around, as in C++)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class SquaredDifference(BinaryElementwise):
    type_name = "SquaredDifference"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = np.subtract(a, b)
        return np.multiply(d, d)
