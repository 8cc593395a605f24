"""A lone data-dependent node (NonZero, Unique, NonMaxSuppression) as a one-step C++ program.

The front half (:mod:`opforge.planning.staging`) runs a model in stages around such a node and
hands the device the node alone (:func:`opforge.planning.lone_data_dependent_node`). Its C++
kernel needs every shape before it runs, so its outputs are allocated at an upper bound of the
dynamic dimension (``numel`` for NonZero/Unique, batch * classes * boxes for NonMaxSuppression);
the kernel writes the actual size into an extra output, and the outputs are trimmed to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node

from opforge_cpu.emit import attrs_dict


def upper_bound(node: Node) -> int:
    """Upper bound of the dynamic dimension of ``node``'s outputs."""
    x = node.inputs[0].shape
    if node.type_name == "NonZero":
        return max(1, int(np.prod(x, dtype=np.int64)))
    if node.type_name == "Unique":
        if len(node.inputs) > 1:
            axis = int(np.asarray(node.inputs[1].node.constant_value()).reshape(-1)[0])
            return int(x[axis % len(x)])
        return int(np.prod(x, dtype=np.int64))
    b, c, n = node.inputs[1].shape
    bound = b * c * n
    if len(node.inputs) > 2:
        v = node.inputs[2].node.constant_value()
        if v is not None and np.asarray(v).size:
            bound = b * c * min(n, max(0, int(np.asarray(v).reshape(-1)[0])))
    return int(bound)


class DataDependentProgram:
    """``node`` alone, outputs at their upper bound plus the actual size; looks like a
    ``_core.Program`` to the executable (``create_state``, ``run``, ``profile``)."""

    python_calls = 0

    def __init__(self, core: Any, node: Node, num_threads: int, profiling: bool) -> None:
        prog = core.Program()
        bound = upper_bound(node)
        ins: list[int] = []
        feed: list[int] = []
        for i in node.inputs:
            v = i.node.constant_value()
            t = prog.add_tensor(i.element_type.ir, list(i.shape), None if v is None else np.asarray(v))
            ins.append(t)
            if v is None:
                feed.append(t)
        #: per output, the axis whose size only the data decides (None: a static output)
        self.dynamic_axes: list[int | None] = []
        outs = []
        for o in node.outputs():
            dims = o.partial_shape.dims
            self.dynamic_axes.append(next((k for k, d in enumerate(dims) if d is None), None))
            outs.append(prog.add_tensor(o.element_type.ir, [bound if d is None else int(d) for d in dims], None))
        outs.append(prog.add_tensor(Type.i64.ir, [1], None))
        prog.add_node(node.name, node.type_name, node.version, attrs_dict(node), ins, outs, [node.name])
        prog.set_io(feed, outs)
        prog.finalize(num_threads, profiling)
        self.program = prog

    def create_state(self) -> Any:
        return self.program.create_state()

    def run(self, state: Any, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        outs = self.program.run(state, list(inputs))
        size = int(outs[-1][0])
        trimmed = []
        for a, axis in zip(outs[:-1], self.dynamic_axes):
            if axis is not None:
                index = [slice(None)] * a.ndim
                index[axis] = slice(0, size)
                a = np.ascontiguousarray(a[tuple(index)])
            trimmed.append(a)
        return trimmed

    def profile(self, state: Any) -> list[Any]:
        return list(self.program.profile(state))
