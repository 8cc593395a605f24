"""BitCast: the bits of each element read as ``destination_type`` (ONNX BitCast-26).

Not an OpenVINO operation: opforge's own standard op (listed under opset16, the newest opset
name opforge writes, so devices treat it as built in; OpenVINO cannot read it back). Both types
must have the same bit width, so the shape is unchanged; bytes are read little-endian. A boolean
result is ``true`` for any non-zero byte (a bool can only hold 0 or 1).
"""

from __future__ import annotations

import numpy as np

from opforge.element_type import Type
from opforge.op import InferContext, Op, TensorSpec
from opforge.opset.convert import ConvertAttrs


class BitCastAttrs(ConvertAttrs):
    """One concrete ``destination_type``, validated as Convert's."""


class BitCast(Op):
    type_name = "BitCast"
    version = "opset16"
    Attrs = BitCastAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: BitCastAttrs = ctx.attrs  # type: ignore[assignment]
        src = ctx.input_type(0)
        if src is not Type.dynamic and src.bitwidth != a.destination_type.bitwidth:
            raise ctx.error(f"BitCast from {src} ({src.bitwidth} bits) to {a.destination_type} "
                            f"({a.destination_type.bitwidth} bits): the bit widths must be equal")
        return [TensorSpec(a.destination_type, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: BitCastAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        # a C-ordered little-endian copy keeps 0-d inputs 0-d (ascontiguousarray would not)
        x = np.asarray(inputs[0]).astype(inputs[0].dtype.newbyteorder("<"), order="C")
        to = attrs.destination_type
        if to is Type.boolean:
            return [x.view(np.uint8) != 0]
        return [x.view(to.np.newbyteorder("<")).astype(to.np, copy=False)]
