"""squeeze (X -> Out), the older op without XShape: as squeeze2."""

from __future__ import annotations

from opforge_paddle.ops import squeeze2
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("squeeze", squeeze2.convert)
