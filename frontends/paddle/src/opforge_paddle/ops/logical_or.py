"""logical_or (X, Y -> Out) -> LogicalOr, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.lowering import binary
from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("logical_or", elementwise("LogicalOr"))

PIR = binary("logical_or", "logical_or")
