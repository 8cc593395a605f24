"""share_data (X -> Out): the input itself (PIR's share_data_ aliases a buffer)."""

from __future__ import annotations

from opforge_paddle.ops import assign
from opforge_paddle.ops._helpers import translator
from opforge_paddle.pir_signatures import unary

EXTENSION = translator("share_data", assign.convert)

PIR = unary("share_data")
