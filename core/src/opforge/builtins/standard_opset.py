"""Registers the standard opset (every op module in :mod:`opforge.opset`)."""

from __future__ import annotations

from opforge.frontend.framework_node import FrameworkNode
from opforge.hookspecs import Register, hookimpl
from opforge.opset import all_ops


@hookimpl
def opforge_register_ops(register: Register) -> None:
    for op_class in all_ops():
        register(op_class)
    # Placeholders of unconverted framework ops (allow_unsupported): registered so a partially
    # converted model can be saved to IR and read back for inspection.
    register(FrameworkNode)
