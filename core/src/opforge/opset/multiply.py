"""Multiply-1: x * y with auto-broadcast (integers wrap around)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class Multiply(BinaryElementwise):
    type_name = "Multiply"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.multiply(a, b)
