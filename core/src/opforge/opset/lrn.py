"""LRN-1: local response normalisation,
``x / (bias + alpha / size**len(axes) * sqr_sum) ** beta`` where ``sqr_sum`` sums ``x**2`` over
a box reaching ``(size - 1) // 2`` elements to either side of each position on every axis in
``axes`` (clipped at the edges; an even ``size`` therefore sums ``size - 1`` elements, as in
OpenVINO)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import check_axes, data_and_axes, to_work, wrap_axes


class LRNAttrs(OpAttrs):
    alpha: float
    beta: float
    bias: float
    size: int


class LRN(Op):
    type_name = "LRN"
    cost_class = CostClass.REDUCING
    value_inputs = (1,)
    version = "opset1"
    Attrs = LRNAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: LRNAttrs = ctx.attrs  # type: ignore[assignment]
        if a.size <= 0:
            raise ctx.error(f"size is {a.size}, expected a positive integer")
        t, ds, axes = data_and_axes(ctx, [1])
        check_axes(ctx, axes, ds)
        return [TensorSpec(t, ds)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: LRNAttrs = attrs
        x = to_work(inputs[0])
        axes = wrap_axes(inputs[1], x.ndim)
        half = (a.size - 1) // 2
        # A box sum is separable: a clipped running-window sum along each axis in turn.
        sq = x * x
        for ax in axes:
            length = x.shape[ax]
            csum = np.concatenate([np.zeros_like(np.take(sq, [0], axis=ax)), np.cumsum(sq, axis=ax)], axis=ax)
            pos = np.arange(length)
            hi = np.minimum(pos + half + 1, length)
            lo = np.maximum(pos - half, 0)
            sq = np.take(csum, hi, axis=ax) - np.take(csum, lo, axis=ax)
        scale = a.alpha / float(a.size) ** len(axes)
        y = x / (a.bias + scale * sq) ** a.beta
        return [y.astype(inputs[0].dtype)]
