"""Window geometry of the standard opset, public for devices: the padding, output sizes and
transposed-convolution geometry that convolution and pooling inference resolve, so that a
device's kernels agree with shape inference (and OpenVINO) by construction.

The implementations live with the ops that use them (``_window``, ``_conv``, ``_pool``); this
module is the stable name to import them by.
"""

from __future__ import annotations

from opforge.opset._conv import backprop_pads
from opforge.opset._pool import pool_geometry
from opforge.opset._window import dilated, resolve_pads, same_pads

__all__ = ["backprop_pads", "dilated", "pool_geometry", "resolve_pads", "same_pads"]
