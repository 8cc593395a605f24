"""GroupConvolutionBackpropData-1: grouped transposed convolution; filters are
[G, C_in / G, C_out / G, kernel...]; an optional third input gives the output's spatial shape."""

from __future__ import annotations

from opforge.opset._conv import ConvolutionBackprop


class GroupConvolutionBackpropData(ConvolutionBackprop):
    type_name = "GroupConvolutionBackpropData"
    version = "opset1"
    grouped = True
