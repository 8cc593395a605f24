"""Minimum-1: the smaller of x and y with auto-broadcast.

NaN follows C++ ``std::min(x, y)``, as OpenVINO's reference does: y is taken only when y < x, so
a NaN x is kept and a NaN y is not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class Minimum(BinaryElementwise):
    type_name = "Minimum"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(b < a, b, a)
