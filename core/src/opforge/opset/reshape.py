"""Reshape-1: the same elements under a new shape (``0`` copies a dimension when
``special_zero``; one ``-1`` is inferred from the element count)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    check_integral,
    check_rank,
    const_ints,
    dims_product,
    infer_errors,
    ints,
)
from opforge.shape import Dim, PartialShape


class ReshapeAttrs(OpAttrs):
    # Required by the specification: it has no default in OpenVINO either.
    special_zero: bool


def reshape_shape(data: PartialShape, pattern: Sequence[int], special_zero: bool) -> PartialShape:
    """The output shape of reshaping ``data`` by ``pattern``."""
    out: list[Dim] = []
    minus_one: int | None = None
    for i, v in enumerate(pattern):
        if v == -1:
            if minus_one is not None:
                raise ShapeError(
                    f"target shape {list(pattern)} has more than one -1 (at {minus_one} and {i})"
                )
            minus_one = i
            out.append(None)
        elif v < -1:
            raise ShapeError(f"target shape {list(pattern)} has invalid dimension {v} at index {i}")
        elif v == 0 and special_zero:
            if data.rank is None:
                out.append(None)
            elif i >= data.rank:
                raise ShapeError(
                    f"target shape {list(pattern)} copies dimension {i} (special_zero) but the input "
                    f"{data} has rank {data.rank}"
                )
            else:
                out.append(data.dims[i])
        else:
            out.append(v)
    in_count = None if data.rank is None else dims_product(data.dims)
    if minus_one is None:
        out_count = dims_product(out)
        if in_count is not None and out_count is not None and in_count != out_count:
            raise ShapeError(
                f"cannot reshape {data} ({in_count} elements) to {PartialShape(out)} ({out_count} elements)"
            )
        return PartialShape(out)
    known = dims_product(out[:minus_one] + out[minus_one + 1 :])
    if known == 0:
        # OpenVINO resolves -1 to 1 when another output dimension is 0, which is only
        # consistent if the input is empty too.
        if in_count is not None and in_count != 0:
            raise ShapeError(
                f"cannot infer the -1 of target shape {list(pattern)}: another dimension is 0 but "
                f"the input {data} is not empty"
            )
        out[minus_one] = 1
    elif in_count is not None and known is not None:
        if in_count % known:
            raise ShapeError(
                f"cannot reshape {data} ({in_count} elements) to {list(pattern)}: {in_count} is not "
                f"divisible by {known}"
            )
        out[minus_one] = in_count // known
    return PartialShape(out)


class Reshape(Op):
    type_name = "Reshape"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1,)
    version = "opset1"
    Attrs = ReshapeAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ReshapeAttrs = ctx.attrs  # type: ignore[assignment]
        check_integral(ctx, 1, "target shape")
        check_rank(ctx, 1, "target shape", (1,))
        t = ctx.input_type(0)
        pattern = const_ints(ctx, 1)
        if pattern is None:
            s = ctx.input_shape(1)
            n = None if s.rank is None else s.dims[0]
            return [TensorSpec(t, PartialShape.dynamic(n))]
        with infer_errors(ctx):
            return [TensorSpec(t, reshape_shape(ctx.input_shape(0), pattern, a.special_zero))]

    @classmethod
    def evaluate(cls, attrs: ReshapeAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, pattern = inputs
        shape = reshape_shape(PartialShape(x.shape), ints(pattern), attrs.special_zero)
        return [x.reshape(shape.to_tuple())]
