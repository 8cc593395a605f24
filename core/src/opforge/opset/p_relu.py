"""PRelu-1: x for x >= 0, slope * x otherwise, on a floating-point tensor.

A 1-D ``slope`` whose length equals the data's dimension 1 (the channels) applies per channel;
any other ``slope`` is broadcast to the data's shape by NumPy rules. The output has the data's
shape. (OpenVINO IR files spell the type ``PReLU``; its IR reader accepts both.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.op import InferContext, Op, TensorSpec
from opforge.opset._elementwise import check_type_class
from opforge.shape import PartialShape


class PRelu(Op):
    type_name = "PRelu"
    version = "opset1"
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t, ts = ctx.input_type(0), ctx.input_type(1)
        check_type_class(ctx, t, "float", "input 0 (data)")
        if t is not Type.dynamic and ts is not Type.dynamic and ts != t:
            raise ctx.error(f"input 1 (slope) has element type {ts}, expected {t} like the data")
        data, slope = ctx.input_shape(0), ctx.input_shape(1)
        if data.rank is not None and slope.rank is not None and not _per_channel(data, slope):
            _check_unidirectional(ctx, data, slope)
        return [TensorSpec(t if t is not Type.dynamic else ts, data)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, slope = inputs
        if slope.ndim == 1 and x.ndim >= 2 and slope.shape[0] == x.shape[1]:
            slope = slope.reshape((1, slope.shape[0]) + (1,) * (x.ndim - 2))
        v = x.astype(np.float64)
        y = np.where(v < 0, v * slope.astype(np.float64), v)
        return [np.broadcast_to(y, x.shape).astype(x.dtype)]


def _per_channel(data: PartialShape, slope: PartialShape) -> bool:
    """True when the slope is (or, with dynamic dimensions, may be) a per-channel vector."""
    if slope.rank != 1 or (data.rank or 0) < 2:
        return False
    n, c = slope[0], data[1]
    return n is None or c is None or n == c


def _check_unidirectional(ctx: InferContext, data: PartialShape, slope: PartialShape) -> None:
    """The slope must broadcast to the data's shape without enlarging it."""
    ok = (slope.rank or 0) <= (data.rank or 0)
    if ok:
        for s, d in zip(reversed(slope.dims), reversed(data.dims)):
            if s is not None and s != 1 and d is not None and s != d:
                ok = False
                break
    if not ok:
        raise ctx.error(
            f"input 1 (slope) of shape {slope} is neither a per-channel vector of data dimension 1 "
            f"nor broadcastable to the data shape {data}"
        )
