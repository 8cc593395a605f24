"""ReduceL2: ReduceL2 (see :mod:`opforge_onnx.ops._reduce`)."""

from __future__ import annotations

from opforge_onnx.ops._reduce import make

EXTENSION = make("ReduceL2")
