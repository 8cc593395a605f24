"""Convolution-1: 1-D, 2-D or 3-D convolution of data [N, C_in, spatial...] with filters
[C_out, C_in, kernel...]."""

from __future__ import annotations

from opforge.op import CostClass
from opforge.opset._conv import ConvolutionForward


class Convolution(ConvolutionForward):
    type_name = "Convolution"
    cost_class = CostClass.COMPUTE
    version = "opset1"
