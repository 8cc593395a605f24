"""GroupConvolution-1: convolution whose channels split into G groups; filters are
[G, C_out / G, C_in / G, kernel...]."""

from __future__ import annotations

from opforge.op import CostClass
from opforge.opset._conv import ConvolutionForward


class GroupConvolution(ConvolutionForward):
    type_name = "GroupConvolution"
    cost_class = CostClass.COMPUTE
    version = "opset1"
    grouped = True
