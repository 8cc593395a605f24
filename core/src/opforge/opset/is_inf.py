"""IsInf-10: true where an element is an infinity of a detected sign; the output is boolean.

``detect_negative`` and ``detect_positive`` choose which infinities are detected.
"""

from __future__ import annotations

import numpy as np

from opforge.op import OpAttrs
from opforge.opset._elementwise import FloatPredicate


class IsInfAttrs(OpAttrs):
    detect_negative: bool = True
    detect_positive: bool = True


class IsInf(FloatPredicate):
    type_name = "IsInf"
    version = "opset10"
    Attrs = IsInfAttrs

    @classmethod
    def compute(cls, attrs: IsInfAttrs, x: np.ndarray) -> np.ndarray:
        out = np.zeros(x.shape, dtype=np.bool_)
        if attrs.detect_positive:
            out |= np.isposinf(x)
        if attrs.detect_negative:
            out |= np.isneginf(x)
        return out
