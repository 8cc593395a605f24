"""LogSoftmax-5: ``x - max - log(sum(exp(x - max)))`` along ``axis`` (negative counts from the end)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.opset._softmax import AxisAttrs, SoftmaxLike, shifted


class LogSoftmaxAttrs(AxisAttrs):
    """The attributes of LogSoftmax."""


class LogSoftmax(SoftmaxLike):
    type_name = "LogSoftmax"
    version = "opset5"
    Attrs = LogSoftmaxAttrs

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        s = shifted(inputs[0], attrs.axis)
        y = s - np.log(np.sum(np.exp(s), axis=attrs.axis, keepdims=True))
        return [y.astype(inputs[0].dtype)]
