"""NonZero-3: the coordinates of the non-zero elements, shaped ``[rank, count]`` in row-major
order. A scalar counts as a one-element 1-D tensor (as OpenVINO computes it)."""

from __future__ import annotations

import numpy as np

from opforge.op import InferContext, Op, TensorSpec
from opforge.opset._shape_util import OutputTypeAttrs
from opforge.shape import PartialShape


class NonZeroAttrs(OutputTypeAttrs):
    """The attributes of NonZero."""


class NonZero(Op):
    type_name = "NonZero"
    data_dependent_shape = True
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
