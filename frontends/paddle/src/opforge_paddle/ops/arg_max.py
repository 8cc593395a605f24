"""arg_max (X -> Out): the index of the first maximum along ``axis``."""

from __future__ import annotations

from opforge_paddle.ops._arg_extreme import arg_extreme, pir_arg
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("arg_max", arg_extreme("max"))

PIR = pir_arg("argmax", "arg_max")
