"""GRN-1 (global response normalisation): ``x / sqrt(sum(x**2 over channels) + bias)`` for data
of rank 2 to 4 with channels on axis 1."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import check_rank, same_type, to_work


class GRNAttrs(OpAttrs):
    bias: float


class GRN(Op):
    type_name = "GRN"
    cost_class = CostClass.REDUCING
    version = "opset1"
    Attrs = GRNAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = same_type(ctx, [(0, "data")], "float")
        check_rank(ctx, 0, "data", [2, 3, 4])
        return [TensorSpec(t, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = to_work(inputs[0])
        norm = np.sqrt(np.sum(x * x, axis=1, keepdims=True) + np.asarray(attrs.bias, dtype=x.dtype))
        return [(x / norm).astype(inputs[0].dtype)]
