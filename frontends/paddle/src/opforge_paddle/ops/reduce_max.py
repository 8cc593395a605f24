"""reduce_max (X -> Out) -> ReduceMax over ``dim`` (all axes when empty or ``reduce_all``)."""

from __future__ import annotations

from opforge_paddle.ops._helpers import translator
from opforge_paddle.ops._reduce import pir_reduce, reduce

EXTENSION = translator("reduce_max", reduce("ReduceMax"))

PIR = pir_reduce("max", "reduce_max")
