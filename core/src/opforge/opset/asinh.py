"""Asinh-3: the inverse hyperbolic sine of each element.

Integer tensors are accepted; their results are rounded half away from zero.

The operation is version 3 of Asinh (``ov::op::v3``), but OpenVINO first put it in opset4 and its
IR reader only knows it there, so the IR version is ``opset4``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass
from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._numeric_cast import apply_float_fn


class Asinh(UnaryElementwise):
    type_name = "Asinh"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset4"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        return apply_float_fn(x, np.arcsinh)
