"""logical_xor (X, Y -> Out) -> LogicalXor, with Paddle's ``axis`` broadcasting."""

from __future__ import annotations

from opforge_paddle.ops._elementwise import elementwise
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import binary

EXTENSION = translator("logical_xor", elementwise("LogicalXor"))

PIR = binary("logical_xor", "logical_xor")
