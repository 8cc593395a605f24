"""arg_min (X -> Out): the index of the first minimum along ``axis``."""

from __future__ import annotations

from opforge_paddle.ops._arg_extreme import arg_extreme, pir_arg
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("arg_min", arg_extreme("min"))

PIR = pir_arg("argmin", "arg_min")
