"""elementwise_mod (X, Y -> Out) -> FloorMod, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("elementwise_mod", elementwise("FloorMod"))

PIR = binary("remainder", "elementwise_mod")
