"""Pad-12: pad (or, with negative pads, crop) every axis of a tensor.

Modes: ``constant`` (``pad_value``, default 0), ``edge`` (repeat the border element),
``reflect`` (mirror without the border, pads < dimension) and ``symmetric`` (mirror with the
border, pads <= dimension). Padded positions mirror the *original* data even where the other
side is cropped, as in OpenVINO.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    check_integral,
    check_rank,
    const_ints,
    infer_errors,
    ints,
    vector_length,
)
from opforge.shape import Dim, PartialShape


class PadAttrs(OpAttrs):
    pad_mode: Literal["constant", "edge", "reflect", "symmetric"] = "constant"


def pad_shape(
    mode: str, data: PartialShape, begin: Sequence[int] | None, end: Sequence[int] | None
) -> PartialShape:
    if data.rank is None:
        return PartialShape.dynamic()
    for name, v in (("pads_begin", begin), ("pads_end", end)):
        if v is not None and len(v) != data.rank:
            raise ShapeError(f"{name} {list(v)} must have one value per data dimension ({data.rank})")
    dims: list[Dim] = []
    for i, d in enumerate(data.dims):
        b = None if begin is None else begin[i]
        e = None if end is None else end[i]
        if d is not None:
            for name, p in (("pads_begin", b), ("pads_end", e)):
                if p is None or p <= 0:
                    continue
                if mode == "edge" and d == 0:
                    raise ShapeError(f"mode 'edge' cannot pad the empty dimension {i}")
                if mode == "reflect" and p >= d:
                    raise ShapeError(f"mode 'reflect' needs {name}[{i}] ({p}) less than the dimension ({d})")
                if mode == "symmetric" and p > d:
                    raise ShapeError(f"mode 'symmetric' needs {name}[{i}] ({p}) at most the dimension ({d})")
        if d is None or b is None or e is None:
            dims.append(None)
            continue
        if d + b + e < 0:
            raise ShapeError(f"pads {b} and {e} crop more than dimension {i} ({d}) holds")
        dims.append(d + b + e)
    return PartialShape(dims)


def _source_index(mode: str, size: int, begin: int, out_len: int) -> tuple[np.ndarray, np.ndarray | None]:
    """For each output position along one axis, the input position it copies; for constant
    mode also the mask of positions that take the pad value."""
    c = np.arange(out_len, dtype=np.int64) - begin
    if mode == "constant":
        outside = (c < 0) | (c >= size)
        return np.clip(c, 0, max(size - 1, 0)), outside
    if mode == "edge":
        return np.clip(c, 0, size - 1), None
    if mode == "reflect":
        c = np.where(c < 0, -c, c)
        return np.where(c >= size, 2 * (size - 1) - c, c), None
    c = np.where(c < 0, -c - 1, c)
    return np.where(c >= size, 2 * size - 1 - c, c), None


class Pad(Op):
    type_name = "Pad"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1, 2)
    scalar_inputs = (3,)
    version = "opset12"
    Attrs = PadAttrs
    min_inputs = 3
    max_inputs = 4

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: PadAttrs = ctx.attrs  # type: ignore[assignment]
        t = ctx.input_type(0)
        data = ctx.input_shape(0)
        for i, name in ((1, "pads_begin"), (2, "pads_end")):
            check_integral(ctx, i, name)
            check_rank(ctx, i, name, (1,))
            n = vector_length(ctx.input_shape(i))
            if data.rank is not None and n is not None and n != data.rank:
                raise ctx.error(f"{name} has {n} values but the data {data} has rank {data.rank}")
        if ctx.num_inputs > 3:
            check_rank(ctx, 3, "pad_value", (0,))
            vt = ctx.input_type(3)
            if t is not vt and Type.dynamic not in (t, vt):
                raise ctx.error(f"pad_value has element type {vt}, the data {t}")
        with infer_errors(ctx):
            return [TensorSpec(t, pad_shape(a.pad_mode, data, const_ints(ctx, 1), const_ints(ctx, 2)))]

    @classmethod
    def evaluate(cls, attrs: PadAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        begin, end = ints(inputs[1]), ints(inputs[2])
        value = inputs[3] if len(inputs) > 3 else np.zeros((), x.dtype)
        shape = pad_shape(attrs.pad_mode, PartialShape(x.shape), begin, end).to_tuple()
        out = x
        for axis, (b, n) in enumerate(zip(begin, shape)):
            size = out.shape[axis]
            if size == 0 or n == 0:
                # Nothing to copy from (or to): every position is padding.
                new_shape = list(out.shape)
                new_shape[axis] = n
                out = np.full(new_shape, value, dtype=x.dtype)
                continue
            src, outside = _source_index(attrs.pad_mode, size, b, n)
            out = np.take(out, src, axis=axis)
            if outside is not None and outside.any():
                mask_shape = [1] * out.ndim
                mask_shape[axis] = n
                out = np.where(outside.reshape(mask_shape), value.astype(x.dtype), out)
        return [np.asarray(out, dtype=x.dtype)]
