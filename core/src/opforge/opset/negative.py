"""Negative-1: -x for each element.

Integers wrap around as in C++ (the negation of the most negative value is itself; unsigned
values are negated modulo 2**N).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._numeric_cast import apply_float_fn, is_float_dtype


class Negative(UnaryElementwise):
    type_name = "Negative"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        if is_float_dtype(x.dtype):
            return apply_float_fn(x, np.negative)
        return np.negative(x)
