"""logical_and (X, Y -> Out) -> LogicalAnd, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("logical_and", elementwise("LogicalAnd"))

PIR = binary("logical_and", "logical_and")
