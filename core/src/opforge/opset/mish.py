"""Mish-4: x * tanh(softplus(x)) for each element of a floating-point tensor."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass
from opforge.opset._elementwise import UnaryElementwise


class Mish(UnaryElementwise):
    type_name = "Mish"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset4"
    accepts = "float"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        v = x.astype(np.float64)
        return (v * np.tanh(np.logaddexp(0.0, v))).astype(x.dtype)
