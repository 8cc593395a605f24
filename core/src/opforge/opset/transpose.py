"""Transpose-1: permute the axes of a tensor (an empty order reverses them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._shape_util import ShapeError, check_integral, check_rank, const_ints, infer_errors, ints
from opforge.shape import PartialShape


def check_order(order: Sequence[int], rank: int) -> list[int]:
    """The permutation to apply; an empty order means reversing the axes."""
    if not order:
        return list(range(rank - 1, -1, -1))
    if len(order) != rank:
        raise ShapeError(f"input_order {list(order)} has {len(order)} values but the input has rank {rank}")
    if sorted(order) != list(range(rank)):
        raise ShapeError(f"input_order {list(order)} is not a permutation of 0..{rank - 1}")
    return list(order)


class Transpose(Op):
    type_name = "Transpose"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1,)
    version = "opset1"
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_integral(ctx, 1, "input_order")
        check_rank(ctx, 1, "input_order", (1,))
        t = ctx.input_type(0)
        data = ctx.input_shape(0)
        order = const_ints(ctx, 1)
        order_len = ctx.input_shape(1).dims[0] if ctx.input_shape(1).rank == 1 else None
        if data.rank is not None and order_len not in (None, 0, data.rank):
            raise ctx.error(f"input_order has {order_len} values but the input {data} has rank {data.rank}")
        if order is None:
            if data.rank is not None:
                return [TensorSpec(t, PartialShape.dynamic(data.rank))]
            return [TensorSpec(t, PartialShape.dynamic(order_len or None))]
        with infer_errors(ctx):
            if data.rank is None:
                if order:
                    check_order(order, len(order))
                return [TensorSpec(t, PartialShape.dynamic(len(order) or None))]
            perm = check_order(order, data.rank)
        return [TensorSpec(t, PartialShape([data.dims[p] for p in perm]))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, order = inputs
        return [np.transpose(x, check_order(ints(order), x.ndim))]
