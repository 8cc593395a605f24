"""LogicalOr-1: x OR y element-wise with auto-broadcast on boolean tensors."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class LogicalOr(BinaryElementwise):
    type_name = "LogicalOr"
    version = "opset1"
    accepts = "boolean"
    output_boolean = True

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.logical_or(a, b)
