"""com.microsoft QLinearAdd (ONNX Runtime's QOperator format): quantize(dequantize(A) +
dequantize(B)) with per-tensor scales and zero points, NumPy broadcasting (see
:mod:`opforge_onnx.ops._qlinear`)."""

from __future__ import annotations

from opforge_onnx.ops._qlinear import binary

EXTENSION = binary("QLinearAdd", "Add")
