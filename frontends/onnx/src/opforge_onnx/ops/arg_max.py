"""ArgMax: TopK-11 with k=1, mode "max" (see :mod:`opforge_onnx.ops._arg_extreme`)."""

from __future__ import annotations

from opforge_onnx.ops._arg_extreme import make

EXTENSION = make("ArgMax", "max")
