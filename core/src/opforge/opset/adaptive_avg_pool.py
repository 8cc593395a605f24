"""AdaptiveAvgPool-8: average pooling to a requested spatial output shape (second input)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import InferContext, Op, TensorSpec
from opforge.opset._adaptive_pool import adaptive_output_shape, bins
from opforge.opset._nn_util import same_type, to_work


class AdaptiveAvgPool(Op):
    type_name = "AdaptiveAvgPool"
    value_inputs = (1,)
    version = "opset8"
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = same_type(ctx, [(0, "data")], "float")
        return [TensorSpec(t, adaptive_output_shape(ctx))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, out = inputs[0], [int(s) for s in np.asarray(inputs[1]).reshape(-1)]
        y = to_work(x)
        # Bins are boxes, so the average is separable: one averaging matrix per spatial axis.
        for i, o in enumerate(out):
            size = x.shape[2 + i]
            start, end = bins(size, o)
            pos = np.arange(size)
            m = ((pos >= start[:, None]) & (pos < end[:, None])).astype(y.dtype)
            m /= (end - start)[:, None]
            y = np.moveaxis(np.tensordot(y, m, axes=([2 + i], [1])), -1, 2 + i)
        return [y.astype(x.dtype)]
