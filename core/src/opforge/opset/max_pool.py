"""MaxPool-8: maximum over sliding windows, with dilations; also returns where each maximum was.

The second output holds the flat index of each maximum in the input, counted over the axes from
``axis`` on (``axis=0``: the whole tensor; ``axis=2``: within one channel's spatial plane). A
window that lies entirely in the padding yields the lowest finite value and index 0.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import (
    check_index_element_type,
    lower_enum,
    lowest,
    normalize_axis,
    parse_type,
    same_type,
)
from opforge.opset._pool import padded_windows, pool_geometry, pool_output_shape, pool_spatial_rank
from opforge.opset._window import AutoPad


class MaxPoolAttrs(OpAttrs):
    strides: list[int]
    dilations: list[int]
    pads_begin: list[int]
    pads_end: list[int]
    kernel: list[int]
    rounding_type: Literal["floor", "ceil"] = "floor"
    auto_pad: AutoPad = "explicit"
    index_element_type: Type = Type.i64
    axis: int = 0

    _enums = field_validator("rounding_type", "auto_pad", mode="before")(lower_enum)

    _types = field_validator("index_element_type", mode="before")(parse_type)


class MaxPool(Op):
    type_name = "MaxPool"
    version = "opset8"
    Attrs = MaxPoolAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: MaxPoolAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_type(ctx, [(0, "data")])
        check_index_element_type(ctx, a.index_element_type)
        n = pool_spatial_rank(ctx, a.kernel)
        normalize_axis(ctx, a.axis, n + 2)
        shape = pool_output_shape(
            ctx, a.kernel, a.strides, a.dilations, a.pads_begin, a.pads_end, a.auto_pad, a.rounding_type
        )
        return [TensorSpec(t, shape), TensorSpec(a.index_element_type, shape)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: MaxPoolAttrs = attrs
        x = inputs[0]
        n = x.ndim - 2
        begin, _, out = pool_geometry(
            x.shape[2:],
            a.kernel,
            a.strides,
            a.dilations,
            a.pads_begin,
            a.pads_end,
            a.auto_pad,
            a.rounding_type,
        )
        floor = lowest(x.dtype)
        view = padded_windows(x, a.kernel, a.strides, a.dilations, begin, out, floor)
        flat = view.reshape(*view.shape[: 2 + n], -1)
        arg = np.argmax(flat, axis=-1)
        values = np.take_along_axis(flat, arg[..., np.newaxis], axis=-1)[..., 0]
        # Input coordinate of each maximum, per spatial axis; padding positions mean "no element".
        taps = np.unravel_index(arg, a.kernel)
        inside = np.ones(arg.shape, dtype=bool)
        coords: list[np.ndarray] = []
        for i in range(n):
            o = np.arange(out[i]).reshape((-1,) + (1,) * (n - 1 - i))
            c = o * a.strides[i] + taps[i] * a.dilations[i] - begin[i]
            inside &= (c >= 0) & (c < x.shape[2 + i])
            coords.append(c)
        axis = a.axis + x.ndim if a.axis < 0 else a.axis
        trailing = (1,) * n
        full = [
            np.arange(x.shape[0]).reshape(-1, 1, *trailing),
            np.arange(x.shape[1]).reshape(-1, *trailing),
            *coords,
        ]
        index = np.zeros(arg.shape, dtype=np.int64)
        for d in range(axis, x.ndim):
            index = index * x.shape[d] + full[d]
        index = np.where(inside, index, 0)
        return [values.astype(x.dtype), index.astype(a.index_element_type.np)]
