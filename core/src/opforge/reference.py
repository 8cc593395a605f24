"""Evaluate a whole model with the NumPy reference implementations.

This is the test oracle (devices are compared against it) and what constant folding uses. It is
deliberately simple and slow; no device executes through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.errors import KernelError, OpforgeError
from opforge.graph import WEIGHTS_RELEASED, Model, Node
from opforge.runtime.inputs import bind_inputs
from opforge.shape import shape_str


def evaluate_node(node: Node, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run one node's reference; errors name the node."""
    if node.rt_info.get(WEIGHTS_RELEASED):
        raise KernelError(
            f"constant '{node.name}' was released by {node.rt_info[WEIGHTS_RELEASED]} after packing its "
            "own copy; evaluate the model you compiled, not the compiled model's runtime graph"
        )
    try:
        outs = node.op.evaluate(node.attrs, inputs)
    except OpforgeError:
        raise
    except Exception as err:
        raise KernelError(
            f"node '{node.name}' ({node.type_name}-{node.version}): reference evaluation failed: "
            f"{type(err).__name__}: {err}"
        ) from err
    if not isinstance(outs, (list, tuple)) or len(outs) != len(node.output_specs):
        raise KernelError(
            f"node '{node.name}' ({node.type_name}): reference returned "
            f"{len(outs) if isinstance(outs, (list, tuple)) else type(outs).__name__} outputs, "
            f"expected {len(node.output_specs)}"
        )
    fixed = []
    for i, (o, spec) in enumerate(zip(outs, node.output_specs)):
        arr = np.asarray(o)
        if spec.type is not Type.dynamic and arr.dtype != spec.type.np:
            raise KernelError(
                f"node '{node.name}' ({node.type_name}): output {i} has element type "
                f"{Type.from_numpy(arr.dtype) if arr.dtype in _KNOWN else arr.dtype}, inferred {spec.type}"
            )
        if not spec.shape.compatible(arr.shape):
            raise KernelError(
                f"node '{node.name}' ({node.type_name}): output {i} has shape {shape_str(arr.shape)}, "
                f"inferred {shape_str(spec.shape)}"
            )
        fixed.append(arr)
    return fixed


_KNOWN = {t.np for t in Type if t is not Type.dynamic}


def evaluate_model(model: Model, inputs: Sequence[Any] | Mapping[Any, Any]) -> list[np.ndarray]:
    """Outputs of ``model`` for ``inputs`` (list by position or dict by name), by reference."""
    arrays = bind_inputs(model, inputs)
    values: dict[int, list[np.ndarray]] = {}
    for p, a in zip(model.parameters, arrays):
        values[p.id] = [a]
    for node in model.get_ordered_ops():
        if node.id in values:
            continue
        ins = [values[i.node.id][i.index] for i in node.inputs]
        values[node.id] = evaluate_node(node, ins)
    return [values[r.id][0] for r in model.results]
