"""BitwiseLeftShift-15: ``a << b`` element-wise on integers, with NumPy broadcasting (see
:mod:`opforge.opset._bitwise_shift` for shift amounts outside the bit width)."""

from __future__ import annotations

from opforge.opset._bitwise_shift import BitwiseShift


class BitwiseLeftShift(BitwiseShift):
    type_name = "BitwiseLeftShift"
    version = "opset15"
    left = True
