"""less_than (X, Y -> Out) -> Less, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("less_than", elementwise("Less"))

PIR = binary("less_than", "less_than")
