"""elementwise_max (X, Y -> Out) -> Maximum, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("elementwise_max", elementwise("Maximum"))

PIR = binary("maximum", "elementwise_max")
