"""Maximum-1: the larger of x and y with auto-broadcast.

NaN propagates, as ONNX Runtime's Max and IEEE 754-2019 ``maximum`` do: a NaN in either input
gives NaN (OpenVINO's ``std::max(x, y)`` keeps a NaN x but drops a NaN y, so the answer would
depend on the operand order).
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
        return np.maximum(a, b)
