"""ArgMin: TopK-11 with k=1, mode "min" (see :mod:`opforge_onnx.ops._arg_extreme`)."""

from __future__ import annotations

from opforge_onnx.ops._arg_extreme import make

EXTENSION = make("ArgMin", "min")
