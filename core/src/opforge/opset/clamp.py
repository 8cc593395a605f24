"""Clamp-1: each element limited to [min, max].

For integer tensors the bounds are converted as the specification says: ``min`` rounded up,
``max`` rounded down, both then limited to the type's range (so ``min=-1.5`` on a ``u8`` tensor
means 0, not a wrapped-around 255). NaN elements stay NaN.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import model_validator

from opforge.op import OpAttrs
from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._numeric_cast import is_float_dtype


class ClampAttrs(OpAttrs):
    min: float
    max: float

    @model_validator(mode="after")
    def _ordered(self) -> ClampAttrs:
        if not self.min <= self.max:
            raise ValueError(f"'min' ({self.min}) must be less than or equal to 'max' ({self.max})")
        return self


class Clamp(UnaryElementwise):
    type_name = "Clamp"
    version = "opset1"
    Attrs = ClampAttrs

    @classmethod
    def compute(cls, attrs: ClampAttrs, x: np.ndarray) -> np.ndarray:
        if is_float_dtype(x.dtype):
            lo: Any = np.asarray(attrs.min).astype(x.dtype)
            hi: Any = np.asarray(attrs.max).astype(x.dtype)
            # maximum/minimum would turn NaN bounds into NaN outputs; NaN inputs must stay NaN,
            # which the comparisons below preserve (a NaN compares false and is kept).
            y = np.where(x < lo, lo, x)
            return np.where(y > hi, hi, y)
        info = np.iinfo(x.dtype)
        lo_i = min(max(_ceil(attrs.min), int(info.min)), int(info.max))
        hi_i = min(max(_floor(attrs.max), int(info.min)), int(info.max))
        return np.clip(x, np.asarray(lo_i, x.dtype), np.asarray(hi_i, x.dtype))


def _ceil(v: float) -> int:
    # An infinite bound means "no bound"; Python's math.ceil would raise on it.
    if math.isinf(v):
        return -(2**64) if v < 0 else 2**64
    return math.ceil(v)


def _floor(v: float) -> int:
    if math.isinf(v):
        return -(2**64) if v < 0 else 2**64
    return math.floor(v)
