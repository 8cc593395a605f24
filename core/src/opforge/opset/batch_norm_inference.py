"""BatchNormInference-5: ``gamma * (x - mean) / sqrt(variance + epsilon) + beta`` per channel
(axis 1) of data [N, C, ...]; inputs are data, gamma, beta, mean, variance."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import merge_dim, same_type, to_work
from opforge.shape import Dim

_NAMES = ("data", "gamma", "beta", "mean", "variance")


class BatchNormInferenceAttrs(OpAttrs):
    epsilon: float


class BatchNormInference(Op):
    type_name = "BatchNormInference"
    version = "opset5"
    Attrs = BatchNormInferenceAttrs
    min_inputs = 5
    max_inputs = 5

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: BatchNormInferenceAttrs = ctx.attrs  # type: ignore[assignment]
        if a.epsilon < 0:
            raise ctx.error(f"epsilon is {a.epsilon}, expected a non-negative value")
        t = same_type(ctx, list(enumerate(_NAMES)), "float")
        ds = ctx.input_shape(0)
        if ds.rank is not None and ds.rank < 2:
            raise ctx.error(f"input 0 (data) has rank {ds.rank}, expected 2 or more ([N, C, ...])")
        channels: Dim = ds[1] if ds.rank is not None else None
        for i in range(1, 5):
            s = ctx.input_shape(i)
            if s.rank is None:
                continue
            if s.rank != 1:
                raise ctx.error(f"input {i} ({_NAMES[i]}) has shape {s}, expected 1-D [C]")
            channels = merge_dim(
                ctx, channels, s[0], f"input {i} ({_NAMES[i]}) does not match the channel count"
            )
        if ds.rank is not None and channels is not None and ds[1] is None:
            ds = type(ds)([ds[0], channels, *ds.dims[2:]])
        return [TensorSpec(t, ds)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, gamma, beta, mean, var = (to_work(v) for v in inputs)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        scale = gamma / np.sqrt(var + np.asarray(attrs.epsilon, dtype=x.dtype))
        y = (x - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)
        return [y.astype(inputs[0].dtype)]
