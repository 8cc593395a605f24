"""Softmax-8: ``exp(x - max) / sum(exp(x - max))`` along ``axis`` (negative counts from the end)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import normalize_axis, same_type, to_work


class SoftmaxAttrs(OpAttrs):
    axis: int = 1


class Softmax(Op):
    type_name = "Softmax"
    version = "opset8"
    Attrs = SoftmaxAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = same_type(ctx, [(0, "data")], "float")
        ds = ctx.input_shape(0)
        if ds.rank is not None:
            normalize_axis(ctx, ctx.attrs.axis, ds.rank)  # type: ignore[attr-defined]
        return [TensorSpec(t, ds)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = to_work(inputs[0])
        e = np.exp(x - np.max(x, axis=attrs.axis, keepdims=True))
        return [(e / np.sum(e, axis=attrs.axis, keepdims=True)).astype(inputs[0].dtype)]
