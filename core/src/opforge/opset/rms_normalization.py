"""RMSNormalization: ``x / sqrt(mean(x**2) + epsilon) * scale``, the mean taken over the axes from
``axis`` to the last (ONNX RMSNormalization-23; Paddle's fused RMS norm; OpenVINO's internal RMS).

Not an OpenVINO opset operation: opforge's own standard op (listed under opset16, see
:mod:`opforge.opset.bit_cast`). ``scale`` broadcasts (NumPy rules) onto the normalised dims
``data.shape[axis:]``, so every row of the ``[prod(shape[:axis]), prod(shape[axis:])]`` view is
scaled alike: that keeps the kernels row loops. ONNX allows a scale that also spans the leading
dims; its translator multiplies that one in afterwards. f16 and bf16 are computed in f32 (ONNX's
``stash_type`` 1), f64 in f64.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import normalize_axis, same_type, to_work


class RMSNormalizationAttrs(OpAttrs):
    #: the first normalised axis; negative counts from the back
    axis: int = -1
    epsilon: float = 1e-5

    @field_validator("epsilon")
    @classmethod
    def _epsilon(cls, v: float) -> float:
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"must be a finite non-negative number, got {v}")
        return v


class RMSNormalization(Op):
    type_name = "RMSNormalization"
    version = "opset16"
    Attrs = RMSNormalizationAttrs
    min_inputs = 2
    max_inputs = 2
    cost_class = CostClass.REDUCING

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: RMSNormalizationAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_type(ctx, [(0, "data"), (1, "scale")], "float")
        ds, ss = ctx.input_shape(0), ctx.input_shape(1)
        if ds.rank is None:
            return [TensorSpec(t, ds)]
        if ds.rank == 0:
            raise ctx.error("input 0 (data) is a scalar, expected rank 1 or more")
        first = normalize_axis(ctx, a.axis, ds.rank)
        tail = ds.dims[first:]
        if ss.rank is not None:
            if ss.rank > len(tail):
                raise ctx.error(f"input 1 (scale) has shape {ss}, expected one that broadcasts to the "
                                f"normalised dims {list(tail)} (rank {len(tail)} or less)")
            for d, want in zip(ss.dims[::-1], tail[::-1]):
                if d is not None and d != 1 and want is not None and d != want:
                    raise ctx.error(f"input 1 (scale) has shape {ss}, which does not broadcast to the "
                                    f"normalised dims {list(tail)} of data {ds}")
        return [TensorSpec(t, ds)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: RMSNormalizationAttrs = attrs
        x, scale = to_work(inputs[0]), to_work(inputs[1])
        if x.ndim == 0 or not -x.ndim <= a.axis < x.ndim:
            raise ValueError(f"RMSNormalization: axis {a.axis} is out of range for data of shape {x.shape}")
        first = a.axis % x.ndim
        axes = tuple(range(first, x.ndim))
        eps = np.asarray(a.epsilon, dtype=x.dtype)
        # the mean of an empty row is NaN in NumPy; an empty row has no outputs anyway
        ms = np.mean(x * x, axis=axes, keepdims=True) if x.size else np.zeros((), x.dtype)
        y = x / np.sqrt(ms + eps) * scale
        return [np.asarray(y).astype(inputs[0].dtype)]
