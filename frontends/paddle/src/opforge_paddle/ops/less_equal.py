"""less_equal (X, Y -> Out) -> LessEqual, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("less_equal", elementwise("LessEqual"))

PIR = binary("less_equal", "less_equal")
