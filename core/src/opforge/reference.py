"""Evaluate a whole model with the NumPy reference implementations.

This is the test oracle (devices are compared against it) and what constant folding uses. It is
deliberately simple and slow; no device executes through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.errors import InferenceInputError, InputTypeError, KernelError, OpforgeError
from opforge.graph import Model, Node, Output
from opforge.shape import shape_str


def evaluate_node(node: Node, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run one node's reference; errors name the node."""
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


def bind_inputs(model: Model, inputs: Sequence[Any] | Mapping[Any, Any]) -> list[np.ndarray]:
    """Match user inputs (a list, or a dict by name/index/port) to the model's parameters and
    check their element types and shapes."""
    ports = model.inputs
    if isinstance(inputs, Mapping):
        bound: list[Any] = [None] * len(ports)
        for key, value in inputs.items():
            if isinstance(key, Output):
                idx = next((i for i, p in enumerate(ports) if p == key), None)
            elif isinstance(key, int):
                idx = key if 0 <= key < len(ports) else None
            else:
                idx = next((i for i, p in enumerate(ports) if key in p.names or p.any_name == key
                            or p.node.name == key), None)
            if idx is None:
                raise InferenceInputError(
                    f"model '{model.name}' has no input {key!r}; inputs: "
                    + ", ".join(repr(p.any_name) for p in ports)
                )
            bound[idx] = value
        missing = [ports[i].any_name for i, v in enumerate(bound) if v is None]
        if missing:
            raise InferenceInputError(
                f"model '{model.name}': missing input(s) {', '.join(repr(m) for m in missing)}"
            )
    else:
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        bound = list(inputs)
        if len(bound) != len(ports):
            raise InferenceInputError(
                f"model '{model.name}' has {len(ports)} input(s) "
                f"({', '.join(repr(p.any_name) for p in ports)}), got {len(bound)}"
            )
    return [check_input(p, v) for p, v in zip(ports, bound)]


def check_input(port: Output, value: Any) -> np.ndarray:
    name = port.any_name
    if not isinstance(value, (np.ndarray, np.generic)):
        if isinstance(value, (int, float, bool, list, tuple)):
            value = np.asarray(value)
            if value.dtype == np.float64 and port.element_type is not Type.f64:
                value = value.astype(port.element_type.np)
            elif value.dtype == np.int64 and port.element_type.is_integral:
                value = value.astype(port.element_type.np)
        else:
            raise InputTypeError(f"Input '{name}' must be a NumPy array, got {type(value).__name__}")
    arr = np.asarray(value)
    want = port.element_type
    if want is not Type.dynamic and arr.dtype != want.np:
        got = str(arr.dtype) if arr.dtype.kind != "O" else "object"
        raise InputTypeError(f"Input '{name}' has wrong element type: got {got}, expected {want}")
    if not port.partial_shape.compatible(arr.shape):
        raise InferenceInputError(
            f"Input '{name}' has wrong shape: got {shape_str(arr.shape)}, "
            f"expected {shape_str(port.partial_shape)}"
        )
    return arr


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
