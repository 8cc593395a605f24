"""Round-5: each element rounded to an integer value, halves to even or away from zero.

Integer tensors are unchanged.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import field_validator

from opforge.op import OpAttrs
from opforge.opset._elementwise import UnaryElementwise
from opforge.opset._nn_util import lower_enum
from opforge.opset._numeric_cast import apply_float_fn, is_float_dtype, round_half_away_from_zero


class RoundAttrs(OpAttrs):
    mode: Literal["half_to_even", "half_away_from_zero"] = "half_to_even"

    # OpenVINO reads enum attributes case-insensitively ("HALF_TO_EVEN" is valid IR).
    _enums = field_validator("mode", mode="before")(lower_enum)


class Round(UnaryElementwise):
    type_name = "Round"
    version = "opset5"
    Attrs = RoundAttrs

    @classmethod
    def compute(cls, attrs: RoundAttrs, x: np.ndarray) -> np.ndarray:
        if not is_float_dtype(x.dtype):
            return x.copy()
        if attrs.mode == "half_to_even":
            return apply_float_fn(x, np.rint)
        return apply_float_fn(x, round_half_away_from_zero)
