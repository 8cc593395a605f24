"""Shared machinery of Softmax and LogSoftmax: float ``data`` normalised along ``axis``
(negative counts from the end), keeping its type and shape."""

from __future__ import annotations

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import normalize_axis, same_type, to_work


class AxisAttrs(OpAttrs):
    axis: int = 1


class SoftmaxLike(Op):
    """Subclasses set ``type_name``, ``version``, ``Attrs`` (an :class:`AxisAttrs`) and implement
    ``evaluate``."""
    cost_class = CostClass.REDUCING

    Attrs = AxisAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = same_type(ctx, [(0, "data")], "float")
        ds = ctx.input_shape(0)
        if ds.rank is not None:
            normalize_axis(ctx, ctx.attrs.axis, ds.rank)  # type: ignore[attr-defined]
        return [TensorSpec(t, ds)]


def shifted(x: np.ndarray, axis: int) -> np.ndarray:
    """``x - max(x)`` along ``axis``, in the reference's work dtype: the argument of ``exp`` that
    cannot overflow."""
    w = to_work(x)
    if w.size == 0:  # an empty tensor has no max (NumPy raises); its softmax is empty too
        return w
    return w - np.max(w, axis=axis, keepdims=True)
