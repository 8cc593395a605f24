"""SoftSign-9: x / (1 + |x|) for each element of a floating-point tensor."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass
from opforge.opset._elementwise import UnaryElementwise


class SoftSign(UnaryElementwise):
    type_name = "SoftSign"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset9"
    accepts = "float"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        v = x.astype(np.float64)
        return (v / (1.0 + np.abs(v))).astype(x.dtype)
