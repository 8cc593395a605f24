"""sin (X -> Out) -> Sin."""

from __future__ import annotations

from opforge_paddle.lowering import unary
from opforge_paddle.ops._helpers import translator
from opforge_paddle.ops._unary import plain

EXTENSION = translator("sin", plain("Sin"))

PIR = unary("sin")
