"""Scatter (deprecated in opset 11): ScatterElements under its old name, same conversion."""

from __future__ import annotations

from opforge_onnx.ops._helpers import translator
from opforge_onnx.ops.scatter_elements import convert

EXTENSION = translator("Scatter", convert)
