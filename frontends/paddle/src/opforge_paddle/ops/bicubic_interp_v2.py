"""bicubic_interp_v2 (X, OutSize, SizeTensor, Scale -> Out) -> Interpolate (cubic)."""

from __future__ import annotations

from opforge_paddle.ops._helpers import translator
from opforge_paddle.ops._interp import interp, pir_interp

EXTENSION = translator("bicubic_interp_v2", interp("cubic"))

PIR = pir_interp("bicubic_interp", "bicubic_interp_v2")
