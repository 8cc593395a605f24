"""Mod-1: the remainder of truncated division (the sign of the dividend), as C's ``fmod``/``%``.

A zero divisor gives NaN for floats and 0 for integers (the specification leaves it undefined).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise
from opforge.opset._numeric_cast import apply_binary


class Mod(BinaryElementwise):
    type_name = "Mod"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return apply_binary(a, b, np.fmod)
