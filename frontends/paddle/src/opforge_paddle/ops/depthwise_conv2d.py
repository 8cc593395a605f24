"""depthwise_conv2d (Input, Filter -> Output) -> GroupConvolution (groups = channels)."""

from __future__ import annotations

from opforge_paddle.ops._conv import convert, pir_conv
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("depthwise_conv2d", convert)

PIR = pir_conv("depthwise_conv2d")
