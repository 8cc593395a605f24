"""LessEqual-1: x <= y element-wise with auto-broadcast; any element type, boolean output."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import BinaryElementwise


class LessEqual(BinaryElementwise):
    type_name = "LessEqual"
    version = "opset1"
    accepts = "any"
    output_boolean = True

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.less_equal(a, b)
