"""NonZero-3: the coordinates of the non-zero elements, shaped ``[rank, count]`` in row-major
order. A scalar counts as a one-element 1-D tensor (as OpenVINO computes it)."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape


class NonZeroAttrs(OpAttrs):
    output_type: Type = Type.i64

    @field_validator("output_type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Type:
        t = Type.parse(v)
        if t not in (Type.i32, Type.i64):
            raise ValueError(f"output_type must be i32 or i64, got {t.ir}")
        return t


class NonZero(Op):
    type_name = "NonZero"
    version = "opset3"
    Attrs = NonZeroAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: NonZeroAttrs = ctx.attrs  # type: ignore[assignment]
        r = ctx.input_shape(0).rank
        return [TensorSpec(a.output_type, PartialShape([None if r is None else max(r, 1), None]))]

    @classmethod
    def evaluate(cls, attrs: NonZeroAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        if x.ndim == 0:
            x = x.reshape(1)
        coords = np.nonzero(x)
        return [np.stack(coords).astype(attrs.output_type.np)]
