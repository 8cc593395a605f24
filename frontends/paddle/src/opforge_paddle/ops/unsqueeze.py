"""unsqueeze (X -> Out), the older op without XShape: as unsqueeze2."""

from __future__ import annotations

from opforge_paddle.ops import unsqueeze2
from opforge_paddle.ops._helpers import translator

EXTENSION = translator("unsqueeze", unsqueeze2.convert)
