"""HSwish-4: x * min(max(x + 3, 0), 6) / 6 for each element of a floating-point tensor."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass
from opforge.opset._elementwise import UnaryElementwise


class HSwish(UnaryElementwise):
    type_name = "HSwish"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset4"
    accepts = "float"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        v = x.astype(np.float64)
        return (v * np.clip(v + 3.0, 0.0, 6.0) / 6.0).astype(x.dtype)
