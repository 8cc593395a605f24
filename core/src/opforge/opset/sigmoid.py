"""Sigmoid-1: the logistic function 1 / (1 + exp(-x)) of each element.

The specification defines it for floating-point tensors only (OpenVINO's own checks are looser).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass
from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._numeric_cast import apply_float_fn


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-x) overflows to inf for very negative x, giving exactly 0, which is the right limit.
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


class Sigmoid(UnaryElementwise):
    type_name = "Sigmoid"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset1"
    accepts = "float"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        return apply_float_fn(x, _sigmoid)
