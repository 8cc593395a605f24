"""softsign (X -> Out) -> SoftSign."""

from __future__ import annotations

from opforge_paddle.ops._helpers import translator
from opforge_paddle.ops._unary import plain
from opforge_paddle.pir_signatures import unary

EXTENSION = translator("softsign", plain("SoftSign"))

PIR = unary("softsign")
