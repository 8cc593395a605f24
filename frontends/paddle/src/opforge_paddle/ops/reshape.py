"""reshape (X -> Out), the older op without XShape: as reshape2."""

from __future__ import annotations

from opforge_paddle.ops import reshape2
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("reshape", reshape2.convert)
