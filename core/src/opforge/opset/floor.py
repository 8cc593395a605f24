"""Floor-1: the largest integer not greater than each element (integers are unchanged)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._numeric_cast import apply_float_fn, is_float_dtype


class Floor(UnaryElementwise):
    type_name = "Floor"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        if is_float_dtype(x.dtype):
            return apply_float_fn(x, np.floor)
        return x.copy()
