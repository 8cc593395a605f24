"""Subtract-1: x - y with auto-broadcast (integers wrap around)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class Subtract(BinaryElementwise):
    type_name = "Subtract"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.subtract(a, b)
