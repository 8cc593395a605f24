"""Specialization: the static-shape copy of a model that one plan is built from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from opforge.errors import UnsupportedOpError
from opforge.graph import WEIGHTS_RELEASED, Model, Node
from opforge.opset.constant import Constant
from opforge.planning.folding import fold_for_plan
from opforge.planning.values import scalar_port, shape_nodes, value_uses
from opforge.transformations.base import Transformation, run_transformations
from opforge.transformations.dead_code import DeadCodeElimination


def specialize(model: Model, shapes: Sequence[Sequence[int]] | None = None,
               values: Mapping[int, np.ndarray] | None = None,
               passes: Iterable[Transformation] = ()) -> Model:
    """A copy of ``model`` planned for one inference's inputs.

    - ``shapes`` (by input index) set the input shapes; every ShapeOf of a static shape folds,
      and so do the shape computations after it.
    - ``values`` (by input index: the value inputs, see :mod:`.values`) replace those inputs
      where their value is needed (value ports and the shape computations feeding them); the
      data they also feed keeps reading the input.
    - ``passes``: the device's graph passes, run after folding (in their ``sort_key`` order);
      the model is folded again when one changed it.

    ``model`` itself is never changed."""
    if model.rt_info.get(WEIGHTS_RELEASED):
        raise UnsupportedOpError(
            f"model '{model.name}': its constant weights were released after a device packed them "
            f"({model.rt_info[WEIGHTS_RELEASED]}); it cannot be planned again")
    m = model.clone()
    if shapes is not None and any(
            p.output(0).partial_shape.to_tuple() != tuple(s) if p.output(0).partial_shape.is_static else True
            for p, s in zip(m.parameters, shapes)):
        m.reshape({i: [int(d) for d in s] for i, s in enumerate(shapes)})
    runtime: set[int] = set()
    shape: set[int] = set()
    if values:
        shape = shape_nodes(m)
        for k, uses in value_uses(m, shape).items():
            if k not in values:
                continue
            param = m.parameters[k]
            arr = np.array(values[k], dtype=param.output_specs[0].type.np, order="C")
            name = f"{param.name}:value"
            const = Node.create(Constant, [], {"value": arr}, name=name)
            scalar = Node.create(Constant, [], {"value": arr.reshape(())}, name=name + ":scalar") \
                if arr.size == 1 else const
            runtime.update((const.id, scalar.id))
            for n, i in uses:
                n.inputs[i] = (scalar if scalar_port(n, i) else const).output(0)
    fold_for_plan(m, runtime, shape)
    DeadCodeElimination().apply(m)
    if passes and run_transformations(m, passes):
        fold_for_plan(m, runtime, shape_nodes(m) if runtime else set())
        DeadCodeElimination().apply(m)
    return m
