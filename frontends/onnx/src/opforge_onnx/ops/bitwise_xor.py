"""BitwiseXor: BitwiseXor (element-wise, with NumPy broadcasting)."""

from __future__ import annotations

from opforge_onnx.ops._elementwise import binary

EXTENSION = binary("BitwiseXor", "BitwiseXor")
