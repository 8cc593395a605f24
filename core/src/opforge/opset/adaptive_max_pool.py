"""AdaptiveMaxPool-8: max pooling to a requested spatial output shape (second input); the second
output is the index of each maximum within its channel's flattened spatial plane."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._adaptive_pool import adaptive_output_shape, bins
from opforge.opset._nn_util import check_index_element_type, parse_type, same_type


class AdaptiveMaxPoolAttrs(OpAttrs):
    index_element_type: Type = Type.i64

    _types = field_validator("index_element_type", mode="before")(parse_type)


class AdaptiveMaxPool(Op):
    type_name = "AdaptiveMaxPool"
    value_inputs = (1,)
    version = "opset8"
    Attrs = AdaptiveMaxPoolAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: AdaptiveMaxPoolAttrs = ctx.attrs  # type: ignore[assignment]
        check_index_element_type(ctx, a.index_element_type)
        t = same_type(ctx, [(0, "data")])
        shape = adaptive_output_shape(ctx)
        return [TensorSpec(t, shape), TensorSpec(a.index_element_type, shape)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, out = inputs[0], [int(s) for s in np.asarray(inputs[1]).reshape(-1)]
        n = x.ndim - 2
        spatial = x.shape[2:]
        edges = [bins(spatial[i], out[i]) for i in range(n)]
        values = np.empty((*x.shape[:2], *out), dtype=x.dtype)
        index = np.empty((*x.shape[:2], *out), dtype=np.int64)
        # One vectorised reduction per output bin; outputs are small (7x7, 1x1...).
        for pos in np.ndindex(*out):
            lo = [int(edges[i][0][p]) for i, p in enumerate(pos)]
            hi = [int(edges[i][1][p]) for i, p in enumerate(pos)]
            sel: tuple[Any, ...] = (Ellipsis, *(slice(b, e) for b, e in zip(lo, hi)))
            region = x[sel]
            flat = region.reshape(*x.shape[:2], -1)
            arg = np.argmax(flat, axis=-1)
            values[(..., *pos)] = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
            local = np.unravel_index(arg, [e - b for b, e in zip(lo, hi)])
            index[(..., *pos)] = np.ravel_multi_index(tuple(c + b for c, b in zip(local, lo)), spatial)
        return [values, index.astype(attrs.index_element_type.np)]
