"""QuantizedMatMul: an int8 matrix product of data [..., M, K] and constant weights [K, N] with
per-column weight scales, fused bias and requantization (see ``_quantized``). Made by
``opforge_cpu.passes.int8``; run by csrc/kernels/quantized_mat_mul.cpp."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.op import Op, OpAttrs
from opforge.opset.mat_mul import MatMul, MatMulAttrs

from opforge_cpu.ops._quantized import QuantizationAttrs, QuantizedOp


class QuantizedMatMul(QuantizedOp):
    type_name = "QuantizedMatMul"
    Attrs = QuantizationAttrs

    @classmethod
    def inner_op(cls, data_rank: int | None, weights_rank: int | None) -> type[Op]:
        return MatMul

    @classmethod
    def inner_attrs(cls, attrs: Any) -> OpAttrs:
        return MatMulAttrs()

    @classmethod
    def scale_weights(cls, w: np.ndarray, scales: np.ndarray) -> np.ndarray:
        return w * scales.reshape(-1)

    @classmethod
    def channel_shaped(cls, v: np.ndarray, rank: int) -> np.ndarray:
        return v.reshape(-1)
