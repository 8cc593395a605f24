"""MelWeightMatrix: the [dft_length // 2 + 1, num_mel_bins] matrix of triangular mel filters that
maps a one-sided spectrum to mel bins (ONNX MelWeightMatrix-17), from five scalars:
``num_mel_bins``, ``dft_length``, ``sample_rate``, ``lower_edge_hertz``, ``upper_edge_hertz``.

Not an OpenVINO operation: opforge's own standard op (listed under opset16, see
:mod:`opforge.opset.bit_cast`). The output's shape is a function of the input *values*, so it is
known only when they are; a model that feeds them at run time is planned per value by the
devices (as for other shape-like inputs), where the op folds to a constant. The formula is ONNX's
reference's (mel scale 2595 * log10(1 + f / 700), band edges floored to spectrum bins).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape


class MelWeightMatrixAttrs(OpAttrs):
    output_type: Type = Type.f32

    @field_validator("output_type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Type:
        t = Type.parse(v)
        if not t.is_float and not t.is_integral:
            raise ValueError(f"must be a numeric element type, got {t}")
        return t


def _scalar(v: np.ndarray | None) -> Any:
    return None if v is None else np.asarray(v).reshape(-1)[0]


class MelWeightMatrix(Op):
    type_name = "MelWeightMatrix"
    version = "opset16"
    Attrs = MelWeightMatrixAttrs
    min_inputs = 5
    max_inputs = 5
    # the output is [dft_length // 2 + 1, num_mel_bins]: those two scalars decide its shape; the
    # sample rate and band edges are coefficients. All five are read like attributes, so a device
    # plans on their values and the matrix folds to a constant (no device needs a kernel for it)
    value_inputs = (0, 1, 2, 3, 4)
    scalar_inputs = (0, 1, 2, 3, 4)

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: MelWeightMatrixAttrs = ctx.attrs  # type: ignore[assignment]
        for i, name in enumerate(("num_mel_bins", "dft_length", "sample_rate")):
            t = ctx.input_type(i)
            if t is not Type.dynamic and not t.is_integral:
                raise ctx.error(f"input {i} ({name}) must be an integer scalar, got {t}")
        for i in range(5):
            r = ctx.input_shape(i).rank
            if r is not None and (r > 1 or (r == 1 and ctx.input_shape(i).dims[0] not in (None, 1))):
                raise ctx.error(f"input {i} must be a scalar, got shape {ctx.input_shape(i)}")
        bins, length = _scalar(ctx.input_value(0)), _scalar(ctx.input_value(1))
        if bins is not None and int(bins) < 1:
            raise ctx.error(f"num_mel_bins must be positive, got {bins}")
        if length is not None and int(length) < 1:
            raise ctx.error(f"dft_length must be positive, got {length}")
        rows = None if length is None else int(length) // 2 + 1
        return [TensorSpec(a.output_type, PartialShape([rows, None if bins is None else int(bins)]))]

    @classmethod
    def evaluate(cls, attrs: MelWeightMatrixAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        bins, length, rate = (int(_scalar(v)) for v in inputs[:3])
        low, high = (_scalar(v) for v in inputs[3:5])
        if bins < 1 or length < 1 or rate <= 0:
            raise ValueError(f"MelWeightMatrix needs positive num_mel_bins, dft_length and sample_rate, "
                             f"got {bins}, {length}, {rate}")
        edges = np.arange(0, bins + 2)
        low_mel = 2595 * np.log1p(low / 700) / np.log(10)
        high_mel = 2595 * np.log1p(high / 700) / np.log(10)
        step = (high_mel - low_mel) / edges.shape[0]
        hz = 700 * np.expm1((edges * step + low_mel) / 2595 * np.log(10))
        points = (((length + 1) * hz) // rate).astype(int)
        out = np.zeros((length // 2 + 1, bins))
        for i in range(bins):
            left, center, right = points[i], points[i + 1], points[i + 2]
            if not (0 <= left <= center <= right and right <= length // 2 + 1 and center < length // 2 + 1):
                raise ValueError(f"mel band {i} spans spectrum bins {left}..{right}, outside 0..{length // 2} "
                                 "(the edge frequencies do not fit dft_length and sample_rate)")
            if center == left:
                out[center, i] = 1
            else:
                for j in range(left, center + 1):
                    out[j, i] = (j - left) / (center - left)
            if right > center:
                for j in range(center, right):
                    out[j, i] = (right - j) / (right - center)
        return [out.astype(attrs.output_type.np)]
