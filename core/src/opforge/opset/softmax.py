"""Softmax-8: ``exp(x - max) / sum(exp(x - max))`` along ``axis`` (negative counts from the end)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._softmax import AxisAttrs, SoftmaxLike, shifted


class SoftmaxAttrs(AxisAttrs):
    """The attributes of Softmax."""


class Softmax(SoftmaxLike):
    type_name = "Softmax"
    version = "opset8"
    Attrs = SoftmaxAttrs

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        e = np.exp(shifted(inputs[0], attrs.axis))
        return [(e / np.sum(e, axis=attrs.axis, keepdims=True)).astype(inputs[0].dtype)]
