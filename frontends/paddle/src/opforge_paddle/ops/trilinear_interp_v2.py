"""trilinear_interp_v2 (X, OutSize, SizeTensor, Scale -> Out) -> Interpolate (linear)."""

from __future__ import annotations

from opforge_paddle.ops._helpers import translator
from opforge_paddle.ops._interp import interp, pir_interp

EXTENSION = translator("trilinear_interp_v2", interp("linear"))

PIR = pir_interp("trilinear_interp", "trilinear_interp_v2")
