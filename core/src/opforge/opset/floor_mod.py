"""FloorMod-1: the remainder of floor division (the sign of the divisor), as Python's ``%``.

A zero divisor gives NaN for floats and 0 for integers (the specification leaves it undefined).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise
from opforge.opset._numeric_cast import apply_binary


class FloorMod(BinaryElementwise):
    type_name = "FloorMod"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return apply_binary(a, b, np.remainder)
