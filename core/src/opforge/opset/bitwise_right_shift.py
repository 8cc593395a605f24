"""BitwiseRightShift-15: ``a >> b`` element-wise on integers (arithmetic for signed types), with
NumPy broadcasting (see :mod:`opforge.opset._bitwise_shift` for shift amounts outside the bit
width)."""

from __future__ import annotations

from opforge.opset._bitwise_shift import BitwiseShift


class BitwiseRightShift(BitwiseShift):
    type_name = "BitwiseRightShift"
    version = "opset15"
    left = False
