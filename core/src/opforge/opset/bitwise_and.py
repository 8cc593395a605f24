"""BitwiseAnd-13: bitwise AND with auto-broadcast on integer tensors; logical AND on booleans."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class BitwiseAnd(BinaryElementwise):
    type_name = "BitwiseAnd"
    version = "opset13"
    accepts = "integral_or_boolean"

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.bitwise_and(a, b)
