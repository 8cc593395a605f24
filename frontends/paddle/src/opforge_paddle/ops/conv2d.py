"""conv2d (Input, Filter -> Output) -> Convolution, or GroupConvolution when ``groups`` > 1."""

from __future__ import annotations

from opforge_paddle.ops._conv import convert, pir_conv
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("conv2d", convert)

PIR = pir_conv("conv2d")
