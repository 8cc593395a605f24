"""Constant folding for planning: core's folding, aware of the values a plan was made for.

After specialization a model holds two kinds of constants: the model's own, and the values of
value inputs read for this plan (*runtime constants*). Everything computed from constants alone
folds, as in :class:`~opforge.transformations.ConstantFolding`, runtime constants included: such
a value (a Range of fed bounds, the window it feeds) is a function of the plan's key, so folding
it specializes the plan on nothing it was not already planned for, and a device needs no kernel
for it. The data path stays on the device because only the *value* uses of a value input read
its runtime constant; its data uses still read the model input.
"""

from __future__ import annotations

import numpy as np

from opforge.graph import Model, Node
from opforge.op import STRUCTURAL
from opforge.opset.constant import Constant
from opforge.planning.values import MAX_VALUE_INPUT_ELEMENTS, scalar_port
from opforge.transformations.constant_folding import MAX_FOLDED_BYTES, folded_values


def _scalar_inputs(node: Node, runtime: set[int]) -> None:
    """One-element runtime constants reaching a scalar port become 0-d (a model input of shape
    [1] is accepted where shape inference would reject a known [1] value)."""
    for i in range(len(node.inputs)):
        if not scalar_port(node, i):
            continue
        src = node.inputs[i].node
        v = src.constant_value()
        if v is not None and src.id in runtime and v.size == 1 and v.ndim:
            const = Node.create(Constant, [], {"value": np.array(v.reshape(()), order="C")},
                                name=src.name + ":scalar")
            runtime.add(const.id)
            node.inputs[i] = const.output(0)


def fold_for_plan(model: Model, runtime: set[int] | None = None, shape: set[int] | None = None,
                  max_value_elements: int = MAX_VALUE_INPUT_ELEMENTS) -> bool:
    """Fold the standard nodes of ``model`` whose inputs are constants, in one topological walk
    that re-infers each node first (a Reshape whose target just folded gets its static shape).

    ``runtime``: ids of runtime constants (values of value inputs); a shape computation (in
    ``shape``) reading one folds only when its result has at most ``max_value_elements``
    elements. Folded results of runtime constants are runtime constants.
    A plugin's op never folds: its kernel is what the user registered. Returns whether anything
    folded."""
    runtime = set() if runtime is None else runtime
    shape = set() if shape is None else shape
    changed = False
    for node in model.get_ordered_ops():
        if node.type_name in STRUCTURAL:
            continue
        _scalar_inputs(node, runtime)
        node.validate_and_infer()
        if not node.op.is_standard or node.rt_info.get("disable_constant_folding"):
            continue
        from_runtime = any(i.node.id in runtime for i in node.inputs)
        if from_runtime and node.id in shape and any(
                not s.shape.is_static or int(np.prod(s.shape.to_tuple(), dtype=np.int64)) > max_value_elements
                for s in node.output_specs):
            continue  # a shape computation this large is data after all: the device computes it
        outs = folded_values(node)
        if outs is None or sum(o.nbytes for o in outs) > MAX_FOLDED_BYTES:
            continue
        for i, arr in enumerate(outs):
            name = node.name if len(outs) == 1 else f"{node.name}:{i}"
            const = Node.create(Constant, [], {"value": np.asarray(arr, order="C")}, name=name)
            const.output(0).set_names(node.output(i).names)
            if from_runtime:
                runtime.add(const.id)
            model.replace_output(node.output(i), const.output(0))
        changed = True
    return changed
