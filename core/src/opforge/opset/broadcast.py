"""Broadcast-3: replicate ``data`` to ``target_shape``.

Modes: ``numpy`` (right-aligned, the output is ``target_shape``), ``bidirectional`` (NumPy
broadcast of both shapes, so target dimensions may be 1) and ``explicit`` (``axes_mapping``
gives the output axis of every data dimension).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    broadcast_dims,
    check_integral,
    check_rank,
    const_ints,
    infer_errors,
    ints,
)
from opforge.shape import Dim, PartialShape


class BroadcastAttrs(OpAttrs):
    mode: Literal["numpy", "explicit", "bidirectional"] = "numpy"


def _target(values: Sequence[int]) -> PartialShape:
    if any(v < 0 for v in values):
        raise ShapeError(f"target_shape {list(values)} has a negative dimension")
    return PartialShape(values)


def broadcast_shape(
    mode: str, data: PartialShape, target: Sequence[int], axes_mapping: Sequence[int] | None
) -> PartialShape:
    t = _target(target)
    if mode == "bidirectional":
        return broadcast_dims(data, t, "bidirectional broadcast")
    if data.rank is None:
        return t
    if mode == "numpy":
        if data.rank > len(target):
            raise ShapeError(f"target_shape {list(target)} has a lower rank than the data {data}")
        offset = len(target) - data.rank
        for i, d in enumerate(data.dims):
            want = target[offset + i]
            if d is not None and d != 1 and d != want:
                raise ShapeError(
                    f"data {data} cannot be broadcast to {list(target)} (data dimension {i} is {d}, "
                    f"target is {want})"
                )
        return t
    if axes_mapping is None:
        return t
    if len(axes_mapping) != data.rank:
        raise ShapeError(
            f"axes_mapping {list(axes_mapping)} must have one value per data dimension ({data.rank})"
        )
    if list(axes_mapping) != sorted(axes_mapping) or len(set(axes_mapping)) != len(axes_mapping):
        raise ShapeError(f"axes_mapping {list(axes_mapping)} must be strictly increasing")
    for i, (ax, d) in enumerate(zip(axes_mapping, data.dims)):
        if not 0 <= ax < len(target):
            raise ShapeError(f"axes_mapping value {ax} is out of range for target rank {len(target)}")
        if d is not None and d != 1 and d != target[ax]:
            raise ShapeError(
                f"data dimension {i} ({d}) cannot be broadcast to target dimension {ax} ({target[ax]})"
            )
    return t


class Broadcast(Op):
    type_name = "Broadcast"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1, 2)
    version = "opset3"
    Attrs = BroadcastAttrs
    min_inputs = 2
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: BroadcastAttrs = ctx.attrs  # type: ignore[assignment]
        check_integral(ctx, 1, "target_shape")
        check_rank(ctx, 1, "target_shape", (1,))
        if a.mode == "explicit":
            if ctx.num_inputs < 3:
                raise ctx.error("mode 'explicit' needs the axes_mapping input")
            check_integral(ctx, 2, "axes_mapping")
            check_rank(ctx, 2, "axes_mapping", (1,))
        elif ctx.num_inputs > 2:
            raise ctx.error(f"axes_mapping is only used in mode 'explicit', not '{a.mode}'")
        t = ctx.input_type(0)
        data = ctx.input_shape(0)
        target = const_ints(ctx, 1)
        if target is None:
            ts = ctx.input_shape(1)
            n = None if ts.rank is None else ts.dims[0]
            if a.mode != "bidirectional" or n is None:
                return [TensorSpec(t, PartialShape.dynamic(n))]
            if data.rank is None:
                return [TensorSpec(t, PartialShape.dynamic())]
            # A static data dimension other than 1 survives bidirectional broadcasting.
            rank = max(n, data.rank)
            dims: list[Dim] = [None] * (rank - data.rank)
            dims += [d if d is not None and d != 1 else None for d in data.dims]
            return [TensorSpec(t, PartialShape(dims))]
        with infer_errors(ctx):
            shape = broadcast_shape(
                a.mode, data, target, const_ints(ctx, 2) if a.mode == "explicit" else None
            )
        return [TensorSpec(t, shape)]

    @classmethod
    def evaluate(cls, attrs: BroadcastAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, target_v = inputs[0], inputs[1]
        target = ints(target_v)
        mapping = ints(inputs[2]) if attrs.mode == "explicit" else None
        shape = broadcast_shape(attrs.mode, PartialShape(x.shape), target, mapping).to_tuple()
        if mapping is not None:
            aligned = [1] * len(target)
            for ax, d in zip(mapping, x.shape):
                aligned[ax] = d
            x = x.reshape(aligned)
        # A real copy: broadcast_to returns a read-only view with zero strides.
        return [np.array(np.broadcast_to(x, shape))]
