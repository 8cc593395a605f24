"""Sign-1: -1, 0 or 1 by the sign of each element; NaN stays NaN and -0.0 gives 0."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._numeric_cast import apply_float_fn, is_float_dtype


class Sign(UnaryElementwise):
    type_name = "Sign"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        if is_float_dtype(x.dtype):
            return apply_float_fn(x, np.sign)
        return np.sign(x)
