"""Matching user inputs to a model's inputs, with the checks every device relies on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.errors import InferenceInputError, InputTypeError
from opforge.graph import Model, Output
from opforge.shape import shape_str


def bind_inputs(model: Model, inputs: Sequence[Any] | Mapping[Any, Any] | np.ndarray,
                ports: Sequence[Output] | None = None) -> list[np.ndarray]:
    """Match user inputs (a list, or a dict by name/index/port) to the model's parameters and
    check their element types and shapes. ``ports``: ``model.inputs`` when the caller keeps them
    (an infer request, once per inference: the list is built anew on each access)."""
    ports = model.inputs if ports is None else ports
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
        if isinstance(inputs, (str, bytes)) or not _iterable(inputs):
            # list(None) or list(3) would be a bare TypeError that names neither the model nor
            # what it takes; a string would be split into characters, one "input" each
            raise InputTypeError(
                f"model '{model.name}' takes its input(s) "
                f"({', '.join(repr(p.any_name) for p in ports)}) as a NumPy array (one input), "
                f"a list or tuple of arrays in input order, or a dict keyed by input name, index or port; "
                f"got {type(inputs).__name__}"
            )
        bound = list(inputs)
        if len(bound) != len(ports):
            raise InferenceInputError(
                f"model '{model.name}' has {len(ports)} input(s) "
                f"({', '.join(repr(p.any_name) for p in ports)}), got {len(bound)}"
            )
    return [check_input(p, v) for p, v in zip(ports, bound)]


class InputBinder:
    """:func:`bind_inputs` for one compiled model, with a fast path for the usual call of an
    inference loop: a list/tuple (or dict by tensor name) of NumPy arrays of exactly the input
    types and static shapes. Those are accepted after a dtype and shape comparison per input,
    without the per-call port lookups (``element_type``, ``partial_shape``, ``any_name`` are
    Python properties) and ABC checks of the general path (5 us of a 1-node model's 10 us);
    anything else, and every error, goes through :func:`bind_inputs`, so what is accepted and
    the messages are the same. The ports are the compiled model's and do not change."""

    def __init__(self, model: Model, ports: Sequence[Output]) -> None:
        self.model = model
        self.ports = list(ports)
        signature: list[tuple[np.dtype[Any], tuple[int, ...]]] | None = []
        for port in self.ports:
            if port.element_type is Type.dynamic or not port.partial_shape.is_static or signature is None:
                signature = None
                continue
            signature.append((np.dtype(port.element_type.np), port.partial_shape.to_tuple()))
        #: (dtype, shape) of every input, or None when one is dynamic (then only the general path)
        self.signature = tuple(signature) if signature is not None else None
        #: input index by tensor name, port name or node name; the first port wins, as in bind_inputs
        self.index: dict[str, int] = {}
        for i, port in enumerate(self.ports):
            for name in (*port.names, port.any_name, port.node.name):
                self.index.setdefault(name, i)

    def bind(self, inputs: Sequence[Any] | Mapping[Any, Any] | np.ndarray) -> list[np.ndarray]:
        sig = self.signature
        # isinstance with concrete classes (not the Mapping ABC: its negative check is slow)
        if sig is not None:
            if isinstance(inputs, (list, tuple)):
                if len(inputs) == len(sig):
                    # a plain loop: all() over a generator costs more than the comparisons
                    for a, (dtype, shape) in zip(inputs, sig):
                        if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape:
                            break
                    else:
                        return list(inputs)
            elif isinstance(inputs, dict):
                bound = self._bind_dict(inputs, sig)
                if bound is not None:
                    return bound
            elif type(inputs) is np.ndarray and len(sig) == 1 and inputs.dtype == sig[0][0] and \
                    inputs.shape == sig[0][1]:
                return [inputs]
        return bind_inputs(self.model, inputs, self.ports)

    def _bind_dict(self, inputs: dict[Any, Any],
                   sig: tuple[tuple[np.dtype[Any], tuple[int, ...]], ...]) -> list[np.ndarray] | None:
        """The arrays in input order when every key is a name of another input and every value
        an exact match; None for anything else (the general path decides)."""
        if len(inputs) != len(sig):
            return None
        bound: list[np.ndarray | None] = [None] * len(sig)
        for key, a in inputs.items():
            i = self.index.get(key) if type(key) is str else None
            if i is None or bound[i] is not None or type(a) is not np.ndarray or a.dtype != sig[i][0] or \
                    a.shape != sig[i][1]:
                return None
            bound[i] = a
        # every slot is filled: as many distinct keys as inputs
        return [a for a in bound if a is not None]


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


def check_input(port: Output, value: Any) -> np.ndarray:
    name = port.any_name
    if not isinstance(value, (np.ndarray, np.generic)):
        if isinstance(value, (int, float, bool, list, tuple)):
            value = _from_python(name, value, port.element_type)
        else:
            raise InputTypeError(f"Input '{name}' must be a NumPy array, got {type(value).__name__}")
    arr = np.asarray(value)
    want = port.element_type
    if want is not Type.dynamic and arr.dtype != want.np:
        got = str(arr.dtype) if arr.dtype.kind != "O" else "object"
        raise InputTypeError(f"Input '{name}' has wrong element type: got {got}, expected {want}")
    shape = port.partial_shape
    # equal to a static shape (the common case): compatible without the per-dimension walk
    if shape != arr.shape and not shape.compatible(arr.shape):
        raise InferenceInputError(
            f"Input '{name}' has wrong shape: got {shape_str(arr.shape)}, "
            f"expected {shape_str(port.partial_shape)}"
        )
    return arr


def _from_python(name: str, value: Any, want: Type) -> np.ndarray:
    """A Python list or scalar as an array of the input's element type, only where every value
    survives the conversion: ``[1.7]`` into int64, ``[300]`` into uint8 or NaN into an integer
    type are refused (a NumPy array of the wrong type is refused too; a list is no loophole).
    Floats into a float type round to the nearest representable value, as any float literal
    does, but must not overflow to infinity."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as err:  # ragged nesting
        raise InputTypeError(f"Input '{name}': cannot make an array of the {type(value).__name__} given: {err}") from None
    if arr.dtype.kind not in "biuf":
        raise InputTypeError(
            f"Input '{name}': the {type(value).__name__} given holds {_kind_name(arr)} values, expected numbers "
            f"of {want}"
        )
    if want is Type.dynamic or arr.dtype == want.np:
        return arr
    target = want.np
    with np.errstate(all="ignore"):
        out = arr.astype(target)
        if target.kind == "f" and arr.dtype.kind == "f":
            bad = np.isfinite(arr) & ~np.isfinite(out)  # overflow; NaN and +-inf stay what they are
        else:
            # integers must come back unchanged (300 -> uint8 44 does not); NaN never equals itself
            bad = out.astype(arr.dtype) != arr
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        got = arr.reshape(-1)[i].item()
        where = f" at index {tuple(int(j) for j in np.unravel_index(i, arr.shape))}" if arr.ndim else ""
        raise InputTypeError(
            f"Input '{name}': value {got!r}{where} of the {type(value).__name__} given cannot be represented "
            f"exactly as {want} (it would become {out.reshape(-1)[i].item()!r}); pass a NumPy array of {want}"
        )
    return out


def _kind_name(arr: np.ndarray) -> str:
    return {"U": "string", "S": "bytes", "O": "object", "c": "complex"}.get(arr.dtype.kind, str(arr.dtype))
