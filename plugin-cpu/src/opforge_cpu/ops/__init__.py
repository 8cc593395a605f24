"""The CPU device's own operations: nodes its graph passes create and only its kernels run
(never in a model file, never in the standard opset). Each declares ``cpu_internal = True``,
which is how the emitter knows to hand it to the C++ kernel of the same type name."""

from __future__ import annotations

from typing import Any

from opforge.graph import Node


def emit_cpu_op(emitter: Any, node: Node) -> bool:
    """Emit ``node`` as one step of its own C++ kernel when it is one of the CPU's own ops;
    False for any other node. Its step reports the names of the nodes it replaced
    (``rt_info["fused_names"]``), as fused steps do."""
    if not getattr(node.op, "cpu_internal", False):
        return False
    from opforge_cpu.emit import attrs_dict  # (emit imports this module)

    fused = [str(n) for n in node.rt_info.get("fused_names") or [node.name]]
    attrs = attrs_dict(node)
    if node.type_name == "ShuffleChannels" and emitter._shuffle_bf16(node):
        attrs["bf16_output"] = True  # bf16 branches shuffled into bf16 parts (emit.py _shuffle_bf16)
    emitter.add(node, node.type_name, attrs, [emitter.tensor(i) for i in node.inputs], node.outputs(), fused)
    return True
