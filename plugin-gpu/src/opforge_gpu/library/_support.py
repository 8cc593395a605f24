"""Support checks shared by the kernel modules of this package (they register no kernel)."""

from __future__ import annotations

import numpy as np
from opforge.graph import Node

from opforge_gpu.storage import supported_type


def float_input(node: Node) -> str | None:
    """Why input 0 is not a floating-point tensor of known rank the GPU stores, or None."""
    t = node.inputs[0].element_type
    if not t.is_float or not supported_type(t):
        return f"{node.type_name} of {t} has no GPU kernel (floating-point types only)"
    if node.inputs[0].partial_shape.rank is None:
        return "input of unknown rank"
    return None


def data_input(node: Node) -> str | None:
    """The check of an op that moves elements of any stored type (its value ports are constants
    when a plan is built: core's front half sees to that, see :mod:`opforge.planning`)."""
    for t in (node.inputs[0].element_type, node.output_specs[0].type):
        if not supported_type(t):
            return f"{node.type_name} of {t} has no GPU kernel"
    if node.inputs[0].partial_shape.rank is None:
        return "input of unknown rank"
    return None


def constant_ints(node: Node, i: int) -> np.ndarray:
    """The (plan-time constant) value of input ``i``."""
    return np.asarray(node.inputs[i].node.constant_value())
