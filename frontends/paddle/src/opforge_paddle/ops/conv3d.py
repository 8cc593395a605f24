"""conv3d (Input, Filter -> Output) -> Convolution / GroupConvolution over three spatial dims."""

from __future__ import annotations

from opforge_paddle.ops._conv import convert, pir_conv
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("conv3d", convert)

PIR = pir_conv("conv3d")
