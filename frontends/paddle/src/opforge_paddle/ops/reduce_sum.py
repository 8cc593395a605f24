"""reduce_sum (X -> Out) -> ReduceSum over ``dim`` (all axes when empty or ``reduce_all``)."""

from __future__ import annotations

from opforge_paddle.ops._helpers import translator
from opforge_paddle.ops._reduce import pir_reduce, reduce

EXTENSION = translator("reduce_sum", reduce("ReduceSum"))

PIR = pir_reduce("sum", "reduce_sum")
