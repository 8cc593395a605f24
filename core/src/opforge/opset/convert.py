"""Convert-1: each element converted to ``destination_type``.

Integers wrap around modulo 2**N; floats become integers by truncation toward zero (out-of-range
values and NaN, undefined in the specification, follow OpenVINO's reference on x86, see
:func:`~opforge.opset._numeric_cast.float_to_integer`); any non-zero value, NaN included, becomes
``true``; ``true``/``false`` become 1/0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._numeric_cast import convert_array


class ConvertAttrs(OpAttrs):
    destination_type: Type

    @field_validator("destination_type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Type:
        t = Type.parse(v)
        if t is Type.dynamic:
            raise ValueError("must be a concrete element type, not 'dynamic'")
        return t


class Convert(Op):
    type_name = "Convert"
    version = "opset1"
    Attrs = ConvertAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        attrs: ConvertAttrs = ctx.attrs  # type: ignore[assignment]
        return [TensorSpec(attrs.destination_type, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: ConvertAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [convert_array(inputs[0], attrs.destination_type.np)]
