"""nearest_interp_v2 (X, OutSize, SizeTensor, Scale -> Out) -> Interpolate (nearest)."""

from __future__ import annotations

from opforge_paddle.ops._helpers import translator
from opforge_paddle.ops._interp import interp, pir_interp

EXTENSION = translator("nearest_interp_v2", interp("nearest"))

PIR = pir_interp("nearest_interp", "nearest_interp_v2")
