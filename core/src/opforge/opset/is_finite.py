"""IsFinite-10: true where an element is neither infinite nor NaN; the output is boolean."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import FloatPredicate


class IsFinite(FloatPredicate):
    type_name = "IsFinite"
    version = "opset10"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        return np.isfinite(x)
