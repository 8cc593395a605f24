"""The custom op: ``Identity`` of opset ``template_extension``.

Like OpenVINO's template extension it copies its input, which makes it the smallest op that
still exercises every extension point: attributes (a ``scale`` so the IR carries one),
shape/type inference, a reference implementation, frontend mappings and device kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge import InferContext, Op, OpAttrs, TensorSpec

#: the custom opset name written into IR files; reading such an IR finds this plugin by it
OPSET = "template_extension"


class TemplateIdentityAttrs(OpAttrs):
    #: y = x * scale; 1.0 makes it a true identity (float inputs only when != 1)
    scale: float = 1.0


class TemplateIdentity(Op):
    type_name = "Identity"
    version = OPSET
    Attrs = TemplateIdentityAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = ctx.input_type(0)
        scale = ctx.attrs.scale  # type: ignore[attr-defined]
        if scale != 1.0 and not t.is_float:
            raise ctx.error(f"scale={scale} needs a floating-point input, got {t}")
        return [TensorSpec(t, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        if attrs.scale == 1.0:
            return [x.copy()]
        return [(x * np.asarray(attrs.scale, dtype=x.dtype)).astype(x.dtype)]
