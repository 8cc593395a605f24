"""LogicalNot-1: the negation of each element of a boolean tensor."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._elementwise import UnaryElementwise


class LogicalNot(UnaryElementwise):
    type_name = "LogicalNot"
    version = "opset1"
    accepts = "boolean"

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        return np.logical_not(x)
