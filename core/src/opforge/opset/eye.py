"""Eye-9: a matrix (or a batch of matrices) with ones on the diagonal shifted by
``diagonal_index`` (positive: above the main diagonal) and zeros elsewhere."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    check_index_type,
    check_rank,
    check_scalar_like,
    const_ints,
    infer_errors,
    ints,
    scalar_int,
)
from opforge.shape import Dim, PartialShape


class EyeAttrs(OpAttrs):
    # Required by the specification: it has no default in OpenVINO either.
    output_type: Type

    @field_validator("output_type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Type:
        t = Type.parse(v)
        if t is Type.dynamic:
            raise ValueError("output_type must be a concrete element type, got dynamic")
        return t


_NAMES = ("num_rows", "num_columns", "diagonal_index", "batch_shape")


def eye_shape(
    rows: int | None, cols: int | None, batch: Sequence[int] | None, batch_len: int | None
) -> PartialShape:
    for name, v in (("num_rows", rows), ("num_columns", cols)):
        if v is not None and v < 0:
            raise ShapeError(f"{name} must not be negative, got {v}")
    if batch is not None and any(b < 0 for b in batch):
        raise ShapeError(f"batch_shape {list(batch)} must not be negative")
    if batch is None and batch_len is None:
        return PartialShape.dynamic()
    lead: list[Dim] = list(batch) if batch is not None else [None] * (batch_len or 0)
    return PartialShape([*lead, rows, cols])


class Eye(Op):
    type_name = "Eye"
    value_inputs = (0, 1, 2, 3)
    version = "opset9"
    Attrs = EyeAttrs
    min_inputs = 3
    max_inputs = 4

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: EyeAttrs = ctx.attrs  # type: ignore[assignment]
        for i in range(ctx.num_inputs):
            check_index_type(ctx, i, _NAMES[i])
            if i < 3:
                check_scalar_like(ctx, i, _NAMES[i])
        rows, cols = const_ints(ctx, 0), const_ints(ctx, 1)
        batch: list[int] | None = []
        batch_len: int | None = 0
        if ctx.num_inputs > 3:
            check_rank(ctx, 3, "batch_shape", (1,))
            batch = const_ints(ctx, 3)
            bs = ctx.input_shape(3)
            batch_len = bs.dims[0] if bs.rank == 1 else None
        with infer_errors(ctx):
            shape = eye_shape(
                None if rows is None else rows[0], None if cols is None else cols[0], batch, batch_len
            )
        return [TensorSpec(a.output_type, shape)]

    @classmethod
    def evaluate(cls, attrs: EyeAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        rows = scalar_int(inputs[0], "num_rows")
        cols = scalar_int(inputs[1], "num_columns")
        k = scalar_int(inputs[2], "diagonal_index")
        batch = ints(inputs[3]) if len(inputs) > 3 else []
        shape = eye_shape(rows, cols, batch, len(batch)).to_tuple()
        m = np.eye(rows, cols, k=k, dtype=attrs.output_type.np)
        return [np.array(np.broadcast_to(m, shape))]
