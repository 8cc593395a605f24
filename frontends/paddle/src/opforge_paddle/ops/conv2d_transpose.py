"""conv2d_transpose (Input, Filter -> Output): a transposed convolution."""

from __future__ import annotations

from opforge_paddle.ops._conv_transpose import convert, pir_conv_transpose
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("conv2d_transpose", convert)

PIR = pir_conv_transpose("conv2d_transpose")
