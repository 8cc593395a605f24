"""Concat-1: join tensors along an axis; all other dimensions must match."""

from __future__ import annotations

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import ShapeError, infer_errors, merge_dim, normalize_axis, same_types
from opforge.shape import Dim, PartialShape


class ConcatAttrs(OpAttrs):
    axis: int


class Concat(Op):
    type_name = "Concat"
    cost_class = CostClass.MOVEMENT
    version = "opset1"
    Attrs = ConcatAttrs
    min_inputs = 1
    max_inputs = None

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ConcatAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_types(ctx, range(ctx.num_inputs), "inputs")
        shapes = [ctx.input_shape(i) for i in range(ctx.num_inputs)]
        ranks = {s.rank for s in shapes if s.rank is not None}
        if not ranks:
            return [TensorSpec(t, PartialShape.dynamic())]
        if len(ranks) > 1:
            raise ctx.error("inputs have different ranks: " + ", ".join(str(s) for s in shapes))
        rank = ranks.pop()
        if rank == 0:
            raise ctx.error("cannot concatenate scalars (inputs have rank 0)")
        with infer_errors(ctx):
            axis = normalize_axis(a.axis, rank)
            out: list[Dim] = [None] * rank
            total: int | None = 0
            for s in shapes:
                if s.rank is None:
                    total = None
                    continue
                for i, d in enumerate(s.dims):
                    if i == axis:
                        total = None if total is None or d is None else total + d
                    else:
                        try:
                            out[i] = merge_dim(out[i], d, f"dimension {i}")
                        except ShapeError:
                            raise ShapeError(
                                f"input shapes {', '.join(str(x) for x in shapes)} differ outside the "
                                f"concatenation axis {axis} (dimension {i})"
                            ) from None
            out[axis] = total
        return [TensorSpec(t, PartialShape(out))]

    @classmethod
    def evaluate(cls, attrs: ConcatAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        axis = normalize_axis(attrs.axis, inputs[0].ndim)
        return [np.concatenate(inputs, axis=axis)]
