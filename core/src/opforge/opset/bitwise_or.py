"""BitwiseOr-13: bitwise OR with auto-broadcast on integer tensors; logical OR on booleans."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class BitwiseOr(BinaryElementwise):
    type_name = "BitwiseOr"
    version = "opset13"
    accepts = "integral_or_boolean"

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.bitwise_or(a, b)
