"""SoftPlus-4: log(1 + exp(x)) for each element of a floating-point tensor.

The specification lets implementations switch to the identity above a type-dependent threshold
for numerical stability; the reference computes the exact value in f64 instead (``logaddexp``
never overflows), which differs from the thresholded form by less than the type's precision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass
from opforge.opset._elementwise import UnaryElementwise


class SoftPlus(UnaryElementwise):
    type_name = "SoftPlus"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset4"
    accepts = "float"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        return np.logaddexp(0.0, x.astype(np.float64)).astype(x.dtype)
