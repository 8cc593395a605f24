"""Gelu-7: the Gaussian error linear unit x * Phi(x), exactly (``ERF``) or by the tanh formula."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.op import CostClass, OpAttrs
from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._numeric_cast import erf


class GeluAttrs(OpAttrs):
    approximation_mode: Literal["ERF", "TANH"] = "ERF"

    @field_validator("approximation_mode", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        # The specification spells the values "erf"/"tanh", OpenVINO writes "ERF"/"TANH" into IR
        # and reads either: accept both, keep OpenVINO's spelling.
        return v.upper() if isinstance(v, str) else v


class Gelu(UnaryElementwise):
    type_name = "Gelu"
    cost_class = CostClass.TRANSCENDENTAL
    version = "opset7"
    Attrs = GeluAttrs
    accepts = "float"

    @classmethod
    def compute(cls, attrs: GeluAttrs, x: np.ndarray) -> np.ndarray:
        v = x.astype(np.float64)
        if attrs.approximation_mode == "TANH":
            inner = math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)
            y = 0.5 * v * (1.0 + np.tanh(inner))
        else:
            y = 0.5 * v * (1.0 + erf(v / math.sqrt(2.0)))
        return y.astype(x.dtype)
