"""elementwise_floordiv (X, Y -> Out) -> Divide (floored for floats), with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("elementwise_floordiv", elementwise("Divide", floor=True))

PIR = binary("floor_divide", "elementwise_floordiv")
