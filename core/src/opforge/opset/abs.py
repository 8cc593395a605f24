"""Abs-1: the absolute value of each element.

Integers keep two's-complement behaviour: the absolute value of the most negative value is itself,
as in C++; unsigned values are unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._numeric_cast import apply_float_fn, is_float_dtype


class Abs(UnaryElementwise):
    type_name = "Abs"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        if is_float_dtype(x.dtype):
            return apply_float_fn(x, np.abs)
        return np.abs(x)
