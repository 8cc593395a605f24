"""Constant-1: a tensor known when the graph is built (weights, shapes, axes)."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape


class ConstantAttrs(OpAttrs):
    value: Any

    @field_validator("value", mode="before")
    @classmethod
    def _array(cls, v: Any) -> np.ndarray:
        arr = np.asarray(v)
        Type.from_numpy(arr.dtype)  # rejects dtypes opforge has no element type for
        # Constants are shared between clones and folded graphs: make mutation impossible.
        if arr.flags.writeable and arr.base is None:
            arr.flags.writeable = False
        elif arr.flags.writeable:
            arr = arr.copy()
            arr.flags.writeable = False
        return arr

    @property
    def element_type(self) -> Type:
        return Type.from_numpy(self.value.dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.shape)


class Constant(Op):
    type_name = "Constant"
    cost_class = CostClass.STRUCTURAL
    version = "opset1"
    Attrs = ConstantAttrs
    min_inputs = 0
    max_inputs = 0

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        v: np.ndarray = ctx.attrs.value  # type: ignore[attr-defined]
        return [TensorSpec(Type.from_numpy(v.dtype), PartialShape(v.shape))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [attrs.value]
