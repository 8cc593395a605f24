"""BitwiseNot-13: every bit of each element inverted; for booleans it is LogicalNot."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import UnaryElementwise


class BitwiseNot(UnaryElementwise):
    type_name = "BitwiseNot"
    version = "opset13"
    accepts = "integral_or_boolean"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        # np.invert is the logical negation on bool arrays, so one call covers both cases.
        return np.invert(x)
