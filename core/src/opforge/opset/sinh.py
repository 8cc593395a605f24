"""Sinh-1: the hyperbolic sine of each element.

Integer tensors are accepted; their results are rounded half away from zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass
from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._numeric_cast import apply_float_fn


class Sinh(UnaryElementwise):
    type_name = "Sinh"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset1"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        return apply_float_fn(x, np.sinh)
