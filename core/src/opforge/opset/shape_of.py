"""ShapeOf-3: the shape of a tensor as a 1-D integer tensor."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape


class ShapeOfAttrs(OpAttrs):
    output_type: Type = Type.i64

    @field_validator("output_type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Type:
        t = Type.parse(v)
        if t not in (Type.i32, Type.i64):
            raise ValueError(f"output_type must be i32 or i64, got {t.ir}")
        return t


class ShapeOf(Op):
    type_name = "ShapeOf"
    version = "opset3"
    Attrs = ShapeOfAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ShapeOfAttrs = ctx.attrs  # type: ignore[assignment]
        return [TensorSpec(a.output_type, PartialShape([ctx.input_shape(0).rank]))]

    @classmethod
    def evaluate(cls, attrs: ShapeOfAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.array(inputs[0].shape, dtype=attrs.output_type.np).reshape(-1)]
