"""Acos: Acos (element-wise)."""

from __future__ import annotations

from opforge_onnx.ops._elementwise import unary

EXTENSION = unary("Acos", "Acos")
