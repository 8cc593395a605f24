"""reduce_prod (X -> Out) -> ReduceProd over ``dim`` (all axes when empty or ``reduce_all``)."""

from __future__ import annotations

from opforge_paddle.ops._helpers import translator
from opforge_paddle.ops._reduce import pir_reduce, reduce

EXTENSION = translator("reduce_prod", reduce("ReduceProd"))

PIR = pir_reduce("prod", "reduce_prod")
