"""QuantizedConvolution: an int8 convolution or group convolution (weights [C_out, C_in, k...] or
[G, C_out/G, C_in/G, k...]) with per-output-channel weight scales, fused bias and requantization
(see ``_quantized``). Made by ``opforge_cpu.passes.int8``; run by
csrc/kernels/quantized_convolution.cpp."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.op import Op, OpAttrs
from opforge.opset._conv import ConvolutionAttrs
from opforge.opset.convolution import Convolution
from opforge.opset.group_convolution import GroupConvolution

from opforge_cpu.ops._quantized import QuantizationAttrs, QuantizedOp


class QuantizedConvolutionAttrs(ConvolutionAttrs, QuantizationAttrs):
    pass


class QuantizedConvolution(QuantizedOp):
    type_name = "QuantizedConvolution"
    Attrs = QuantizedConvolutionAttrs

    @classmethod
    def inner_op(cls, data_rank: int | None, weights_rank: int | None) -> type[Op]:
        # grouped filters carry one more axis than the data: [G, C_out/G, C_in/G, k...]
        grouped = data_rank is not None and weights_rank == data_rank + 1
        return GroupConvolution if grouped else Convolution

    @classmethod
    def inner_attrs(cls, attrs: Any) -> OpAttrs:
        return ConvolutionAttrs(strides=attrs.strides, pads_begin=attrs.pads_begin, pads_end=attrs.pads_end,
                                dilations=attrs.dilations, auto_pad=attrs.auto_pad)

    @classmethod
    def scale_weights(cls, w: np.ndarray, scales: np.ndarray) -> np.ndarray:
        if scales.size == w.shape[0]:
            return w * scales.reshape((-1,) + (1,) * (w.ndim - 1))
        return w * scales.reshape(w.shape[0], w.shape[1], *((1,) * (w.ndim - 2)))

    @classmethod
    def channel_shaped(cls, v: np.ndarray, rank: int) -> np.ndarray:
        return v.reshape((1, -1) + (1,) * (rank - 2))
