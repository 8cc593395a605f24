"""transpose (X -> Out), the older op without XShape: as transpose2."""

from __future__ import annotations

from opforge_paddle.ops import transpose2
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("transpose", transpose2.convert)
