"""Exp-1: e raised to each element.

The specification defines it for floating-point tensors only (OpenVINO's own checks are looser).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass
from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._numeric_cast import apply_float_fn


class Exp(UnaryElementwise):
    type_name = "Exp"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset1"
    accepts = "float"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        return apply_float_fn(x, np.exp)
