"""ShapeOf-3: the shape of a tensor as a 1-D integer tensor."""

from __future__ import annotations

import numpy as np

from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._shape_util import OutputTypeAttrs
from opforge.shape import PartialShape


class ShapeOfAttrs(OutputTypeAttrs):
    """The attributes of ShapeOf."""


class ShapeOf(Op):
    type_name = "ShapeOf"
    cost_class = CostClass.STRUCTURAL
    version = "opset3"
    Attrs = ShapeOfAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ShapeOfAttrs = ctx.attrs  # type: ignore[assignment]
        return [TensorSpec(a.output_type, PartialShape([ctx.input_shape(0).rank]))]

    @classmethod
    def evaluate(cls, attrs: ShapeOfAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.array(inputs[0].shape, dtype=attrs.output_type.np).reshape(-1)]
