"""greater_than (X, Y -> Out) -> Greater, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("greater_than", elementwise("Greater"))

PIR = binary("greater_than", "greater_than")
