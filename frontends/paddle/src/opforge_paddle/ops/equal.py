"""equal (X, Y -> Out) -> Equal, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("equal", elementwise("Equal"))

PIR = binary("equal", "equal")
