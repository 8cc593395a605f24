"""not_equal (X, Y -> Out) -> NotEqual, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("not_equal", elementwise("NotEqual"))

PIR = binary("not_equal", "not_equal")
