"""Elu-1: x for x > 0, alpha * (exp(x) - 1) otherwise, on a floating-point tensor."""

from __future__ import annotations

import numpy as np

from opforge.op import CostClass, OpAttrs
from opforge.opset._elementwise import UnaryElementwise


class EluAttrs(OpAttrs):
    alpha: float


class Elu(UnaryElementwise):
    type_name = "Elu"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset1"
    Attrs = EluAttrs
    accepts = "float"

    @classmethod
    def compute(cls, attrs: EluAttrs, x: np.ndarray) -> np.ndarray:
        v = x.astype(np.float64)
        return np.where(v > 0, v, attrs.alpha * np.expm1(v)).astype(x.dtype)
