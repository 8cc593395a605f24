"""Divide-1: x / y with auto-broadcast.

For integer tensors ``m_pythondiv`` (true by default) selects floor division, as Python's ``//``;
false truncates toward zero, as C's ``/``. Floats ignore it. An integer division by zero gives 0
(the specification leaves it undefined).
"""

from __future__ import annotations

import numpy as np

from opforge.op import CostClass
from opforge.opset._elementwise import BinaryElementwise, BroadcastAttrs
from opforge.opset._numeric_cast import apply_binary, is_float_dtype


class DivideAttrs(BroadcastAttrs):
    m_pythondiv: bool = True


class Divide(BinaryElementwise):
    type_name = "Divide"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset1"
    Attrs = DivideAttrs

    @classmethod
    def compute(cls, attrs: DivideAttrs, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if is_float_dtype(a.dtype):
            return apply_binary(a, b, np.true_divide)
        q = np.floor_divide(a, b)
        if attrs.m_pythondiv or a.dtype.kind == "u":
            return q
        # Floor and truncation differ only for an inexact quotient of operands of opposite signs.
        inexact = np.remainder(a, b) != 0
        opposite = (a < 0) != (b < 0)
        return np.where(inexact & opposite, q + 1, q)
