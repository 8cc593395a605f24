"""Maximum-1: the larger of x and y with auto-broadcast.

NaN follows C++ ``std::max(x, y)``, as OpenVINO's reference does: y is taken only when x < y, so
a NaN x is kept and a NaN y is not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class Maximum(BinaryElementwise):
    type_name = "Maximum"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(a < b, b, a)
