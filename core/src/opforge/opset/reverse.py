"""Reverse-1: flip a tensor along some axes, given as indices (``mode="index"``) or as a
boolean mask with one value per dimension (``mode="mask"``)."""

from __future__ import annotations

from typing import Literal

import numpy as np

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import ShapeError, check_rank, const_ints, infer_errors, ints, normalize_axes


class ReverseAttrs(OpAttrs):
    # Required by the specification: it has no default in OpenVINO either.
    mode: Literal["index", "mask"]


def reverse_axes(mode: str, axes: list[int], rank: int) -> list[int]:
    if mode == "mask":
        if len(axes) != rank:
            raise ShapeError(f"the axes mask has {len(axes)} values but the data has rank {rank}")
        return [i for i, m in enumerate(axes) if m]
    return sorted(set(normalize_axes(axes, rank, "axes")))


class Reverse(Op):
    type_name = "Reverse"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1,)
    version = "opset1"
    Attrs = ReverseAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ReverseAttrs = ctx.attrs  # type: ignore[assignment]
        t = ctx.input_type(1)
        if a.mode == "index" and t is not Type.dynamic and not t.is_integral:
            raise ctx.error(f"axes (input 1) must be integers in mode 'index', got {t}")
        if a.mode == "mask" and t not in (Type.dynamic, Type.boolean):
            raise ctx.error(f"axes (input 1) must be boolean in mode 'mask', got {t}")
        check_rank(ctx, 1, "axes", (1,))
        data = ctx.input_shape(0)
        axes = const_ints(ctx, 1)
        if axes is not None and data.rank is not None:
            with infer_errors(ctx):
                reverse_axes(a.mode, axes, data.rank)
        return [TensorSpec(ctx.input_type(0), data)]

    @classmethod
    def evaluate(cls, attrs: ReverseAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, axes_v = inputs
        axes = reverse_axes(attrs.mode, ints(axes_v), x.ndim)
        return [np.flip(x, axis=tuple(axes)).copy() if axes else x.copy()]
