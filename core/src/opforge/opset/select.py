"""Select-1: elements of ``then`` where ``cond`` is true, else of ``else``.

``numpy`` broadcasts all three inputs together; ``pdpd`` aligns ``else`` to ``then`` and ``cond``
to their result PaddlePaddle-style; ``none`` requires equal shapes.
"""

from __future__ import annotations

import numpy as np

from opforge.element_type import Type
from opforge.op import InferContext, Op, TensorSpec
from opforge.opset._elementwise import BroadcastAttrs, broadcast_shapes, pdpd_align


class Select(Op):
    type_name = "Select"
    version = "opset1"
    Attrs = BroadcastAttrs
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        attrs: BroadcastAttrs = ctx.attrs  # type: ignore[assignment]
        tc, tt, te = ctx.input_type(0), ctx.input_type(1), ctx.input_type(2)
        if tc is not Type.dynamic and tc is not Type.boolean:
            raise ctx.error(f"input 0 (cond) has element type {tc}, expected boolean")
        if tt is not Type.dynamic and te is not Type.dynamic and tt != te:
            raise ctx.error(f"inputs 1 (then) and 2 (else) have different element types: {tt} and {te}")
        mode = attrs.auto_broadcast
        shape = broadcast_shapes(ctx, ctx.input_shape(1), ctx.input_shape(2), mode)
        shape = broadcast_shapes(ctx, shape, ctx.input_shape(0), mode)
        return [TensorSpec(tt if tt is not Type.dynamic else te, shape)]

    @classmethod
    def evaluate(cls, attrs: BroadcastAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        cond, then, other = inputs
        if attrs.auto_broadcast == "pdpd":
            other = pdpd_align(then, other)
            out_ndim = max(then.ndim, other.ndim)
            cond = pdpd_align(np.empty((0,) * out_ndim), cond)
        return [np.where(cond, then, other).astype(then.dtype, copy=False)]
