"""ConvolutionBackpropData-1: transposed convolution of data [N, C_in, spatial...] with filters
[C_in, C_out, kernel...]; an optional third input gives the output's spatial shape."""

from __future__ import annotations

from opforge.opset._conv import ConvolutionBackprop


class ConvolutionBackpropData(ConvolutionBackprop):
    type_name = "ConvolutionBackpropData"
    version = "opset1"
