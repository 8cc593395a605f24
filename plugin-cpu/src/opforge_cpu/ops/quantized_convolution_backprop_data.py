"""QuantizedConvolutionBackpropData: an int8 transposed convolution (ONNX ConvTranspose; weights
[C_in, C_out, k...] as ConvolutionBackpropData has them) with per-output-channel weight scales,
fused bias, Relu/Clamp and requantization (see ``_quantized``). Made by
``opforge_cpu.passes.int8`` (a UNet decoder's upsampling ConvTranspose between quantized
convolutions); run by csrc/kernels/quantized_convolution_backprop_data.cpp (oneDNN's int8
deconvolution)."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.op import Op, OpAttrs
from opforge.opset._conv import ConvolutionBackpropDataAttrs
from opforge.opset.convolution_backprop_data import ConvolutionBackpropData

from opforge_cpu.ops._quantized import QuantizationAttrs, QuantizedOp


class QuantizedConvolutionBackpropDataAttrs(ConvolutionBackpropDataAttrs, QuantizationAttrs):
    pass


class QuantizedConvolutionBackpropData(QuantizedOp):
    type_name = "QuantizedConvolutionBackpropData"
    Attrs = QuantizedConvolutionBackpropDataAttrs
    #: data, weights, weight scales, optional bias (no residual operand)
    max_inputs = 4

    @classmethod
    def inner_op(cls, data_rank: int | None, weights_rank: int | None) -> type[Op]:
        return ConvolutionBackpropData

    @classmethod
    def inner_attrs(cls, attrs: Any) -> OpAttrs:
        return ConvolutionBackpropDataAttrs(strides=attrs.strides, pads_begin=attrs.pads_begin, pads_end=attrs.pads_end,
                                            dilations=attrs.dilations, auto_pad=attrs.auto_pad,
                                            output_padding=attrs.output_padding)

    @classmethod
    def scale_weights(cls, w: np.ndarray, scales: np.ndarray) -> np.ndarray:
        # the output channels are axis 1 of [C_in, C_out, k...]
        return w * scales.reshape((1, -1) + (1,) * (w.ndim - 2))

    @classmethod
    def channel_shaped(cls, v: np.ndarray, rank: int) -> np.ndarray:
        return v.reshape((1, -1) + (1,) * (rank - 2))
