"""Minimum-1: the smaller of x and y with auto-broadcast.

NaN propagates, as ONNX Runtime's Min and IEEE 754-2019 ``minimum`` do: a NaN in either input
gives NaN (OpenVINO's ``std::min(x, y)`` keeps a NaN x but drops a NaN y).
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
        return np.minimum(a, b)
