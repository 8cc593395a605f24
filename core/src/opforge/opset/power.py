"""Power-1: x ** y with auto-broadcast.

Integer powers with a non-negative exponent are exact (wrapping around on overflow, as repeated
C++ multiplication). A negative integer exponent gives what OpenVINO's ``std::pow`` then
``static_cast`` gives: the real result truncated toward zero (so 0 unless |x| is 1).
"""

from __future__ import annotations

import numpy as np

from opforge.op import CostClass
from opforge.opset._elementwise import BinaryElementwise, BroadcastAttrs
from opforge.opset._numeric_cast import apply_binary, float_to_integer, is_float_dtype


class Power(BinaryElementwise):
    type_name = "Power"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset1"

    @classmethod
    def compute(cls, attrs: BroadcastAttrs, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if is_float_dtype(a.dtype):
            return apply_binary(a, b, np.power)
        a_b, b_b = np.broadcast_arrays(a, b)
        negative = b_b < 0
        # NumPy refuses negative integer exponents outright; give those elements exponent 0 here
        # and fill them in from the real-valued power below.
        out = np.power(a_b, np.where(negative, np.zeros((), b.dtype), b_b))
        if np.any(negative):
            with np.errstate(all="ignore"):
                real = np.power(a_b.astype(np.float64), b_b.astype(np.float64))
            out = np.where(negative, float_to_integer(real, a.dtype), out)
        return out
