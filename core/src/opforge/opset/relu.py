"""Relu-1: max(x, 0)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import UnaryElementwise


class Relu(UnaryElementwise):
    type_name = "Relu"
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        return np.maximum(x, np.zeros((), x.dtype))
