"""Parameter-1: a model input."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape


class ParameterAttrs(OpAttrs):
    element_type: Type
    shape: PartialShape

    @field_validator("element_type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Type:
        return Type.parse(v)

    @field_validator("shape", mode="before")
    @classmethod
    def _shape(cls, v: Any) -> PartialShape:
        if isinstance(v, str):
            return PartialShape.parse(v)
        return v if isinstance(v, PartialShape) else PartialShape(v)


class Parameter(Op):
    type_name = "Parameter"
    cost_class = CostClass.STRUCTURAL
    version = "opset1"
    Attrs = ParameterAttrs
    min_inputs = 0
    max_inputs = 0

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ParameterAttrs = ctx.attrs  # type: ignore[assignment]
        return [TensorSpec(a.element_type, a.shape)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        raise ValueError("a Parameter has no value of its own; feed it as a model input")
