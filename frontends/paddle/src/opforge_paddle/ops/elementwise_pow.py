"""elementwise_pow (X, Y -> Out) -> Power, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("elementwise_pow", elementwise("Power"))

PIR = binary("elementwise_pow", "elementwise_pow")
