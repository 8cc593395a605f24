"""BitwiseXor-13: bitwise XOR with auto-broadcast on integer tensors; logical XOR on booleans."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class BitwiseXor(BinaryElementwise):
    type_name = "BitwiseXor"
    version = "opset13"
    accepts = "integral_or_boolean"

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.bitwise_xor(a, b)
