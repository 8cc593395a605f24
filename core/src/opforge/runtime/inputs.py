"""Matching user inputs to a model's inputs, with the checks every device relies on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.errors import InferenceInputError, InputTypeError
from opforge.graph import Model, Output
from opforge.shape import shape_str


def bind_inputs(model: Model, inputs: Sequence[Any] | Mapping[Any, Any] | np.ndarray) -> list[np.ndarray]:
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
            if (value.dtype == np.float64 and port.element_type is not Type.f64) or (value.dtype == np.int64 and port.element_type.is_integral):
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
