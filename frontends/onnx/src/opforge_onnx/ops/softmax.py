"""Softmax: Softmax on the input, or on its 2-D coercion before opset 13 (see
:mod:`opforge_onnx.ops._softmax`)."""

from __future__ import annotations

from opforge_onnx.ops._softmax import make

EXTENSION = make("Softmax")
