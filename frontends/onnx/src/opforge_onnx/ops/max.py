"""Max: Maximum folded over the inputs (see :mod:`opforge_onnx.ops._variadic`)."""

from __future__ import annotations

from opforge_onnx.ops._variadic import make

EXTENSION = make("Max")
