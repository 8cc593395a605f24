"""greater_equal (X, Y -> Out) -> GreaterEqual, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("greater_equal", elementwise("GreaterEqual"))

PIR = binary("greater_equal", "greater_equal")
