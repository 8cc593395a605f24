"""logical_or (X, Y -> Out) -> LogicalOr, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("logical_or", elementwise("LogicalOr"))

PIR = binary("logical_or", "logical_or")
