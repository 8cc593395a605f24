"""elementwise_sub (X, Y -> Out) -> Subtract, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("elementwise_sub", elementwise("Subtract"))

PIR = binary("subtract", "elementwise_sub")
