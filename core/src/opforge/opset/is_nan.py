"""IsNaN-10: true where an element is NaN; the output is boolean."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import FloatPredicate


class IsNaN(FloatPredicate):
    type_name = "IsNaN"
    version = "opset10"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        return np.isnan(x)
