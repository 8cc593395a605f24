"""Value inputs: model inputs whose *values*, not only shapes, decide how a model is planned.

An op says which of its input ports it reads like attributes (``Op.value_inputs``: a Reshape's
target shape, a Range's bounds, TopK's ``k``). When such a port is fed, directly or through a
computation on shapes (``Concat(ShapeOf(x)[0], n)``), by a model input, the device reads that
input's value on the host and plans the model for it: one plan per value, as one plan per input
shape. Values computed from the *data* are not known when planning; :mod:`.staging` handles those.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from opforge.errors import InferenceInputError
from opforge.graph import Model, Node, Output
from opforge.op import STRUCTURAL

#: a model input read on the host to plan the model may have at most this many elements: value
#: inputs are shapes, axes and counts; anything larger is data, and planning per value of data
#: would build a plan per inference
MAX_VALUE_INPUT_ELEMENTS = 4096

#: bound on the walk of :func:`known_at_plan` (shape computations are short)
_MAX_WALK = 256


def value_port(node: Node, i: int) -> bool:
    """Whether input ``i`` of ``node`` is read like an attribute (``Op.value_inputs``)."""
    return i in node.op.value_inputs


def scalar_port(node: Node, i: int) -> bool:
    """Whether input ``i`` of ``node`` takes a scalar (``Op.scalar_inputs``): a one-element value
    of a model input is given to it as a 0-d array."""
    return i in node.op.scalar_inputs


def known_at_plan(out: Output, _memo: dict[int, bool] | None = None) -> bool:
    """Whether the value of ``out`` is known when a plan is built: a constant, a shape, a model
    input (read on the host), or computed from those by standard operations."""
    memo = {} if _memo is None else _memo
    node = out.node
    got = memo.get(node.id)
    if got is not None:
        return got
    if node.type_name in ("Constant", "ShapeOf"):
        ok = True
    elif node.type_name == "Parameter":
        ok = not _large(out)
    elif not node.op.is_standard or not node.inputs or node.op.data_dependent_shape or len(memo) > _MAX_WALK:
        ok = False
    else:
        memo[node.id] = False  # cycles cannot happen; this only bounds the walk
        ok = all(known_at_plan(i, memo) for i in node.inputs)
    memo[node.id] = ok
    return ok


def _large(out: Output) -> bool:
    """Whether ``out`` is statically known to be too large to read as a value input: that is
    data, computed on the device (and staged, when a value port needs it)."""
    ps = out.partial_shape
    return ps.is_static and int(np.prod(ps.to_tuple(), dtype=np.int64)) > MAX_VALUE_INPUT_ELEMENTS


def shape_nodes(model: Model) -> set[int]:
    """Ids of the nodes whose values some value port needs (shape computations), directly or
    through other such nodes. Their results may also be used as data (ONNX OneHot's depth)."""
    consumers = model.consumers()
    found: set[int] = set()
    for node in reversed(model.get_ordered_ops()):
        if node.type_name in STRUCTURAL or not node.op.is_standard:
            continue
        if any(value_port(user, idx) or (user.id in found and user.type_name != "ShapeOf")
               for out in node.outputs() for user, idx in consumers.get(out, [])):
            found.add(node.id)
    return found


def value_uses(model: Model, shape: set[int] | None = None) -> dict[int, list[tuple[Node, int]]]:
    """Per model input (by index), the (node, port) uses that need its value on the host."""
    shape = shape_nodes(model) if shape is None else shape
    consumers = model.consumers()
    out: dict[int, list[tuple[Node, int]]] = {}
    for k, p in enumerate(model.parameters):
        if _large(p.output(0)):
            continue
        uses = [(n, i) for n, i in consumers.get(p.output(0), [])
                if value_port(n, i) or (n.id in shape and n.type_name != "ShapeOf")]
        if uses:
            out[k] = uses
    return out


def value_inputs(model: Model) -> list[int]:
    """Indices of the model inputs whose values the plans depend on."""
    return sorted(value_uses(model))


def read_value_inputs(model: Model, indices: Sequence[int], inputs: Sequence[np.ndarray],
                      device: str) -> dict[int, np.ndarray]:
    """The host values of the value inputs ``indices`` of ``inputs`` (in the model inputs' element
    types, C-contiguous); ``InferenceInputError`` when one is too large to plan on."""
    values: dict[int, np.ndarray] = {}
    for k in indices:
        param = model.parameters[k]
        v = np.array(inputs[k], dtype=param.output_specs[0].type.np, order="C")
        if v.size > MAX_VALUE_INPUT_ELEMENTS:
            raise InferenceInputError(
                f"device {device}: model input {k} ('{param.output(0).any_name}') sets shapes, axes or counts, so "
                f"its value is read to plan the model; it has {v.size} elements, at most "
                f"{MAX_VALUE_INPUT_ELEMENTS} are read this way. Feed it as a constant in the model instead.")
        values[k] = v
    return values
