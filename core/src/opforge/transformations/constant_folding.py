"""Constant folding: replace nodes whose inputs are all constants by their value."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from opforge.errors import OpforgeError
from opforge.graph import Model, Node
from opforge.transformations.base import Transformation

#: nodes that must never be folded: they are model boundaries or hold no computation
_NEVER = {"Parameter", "Result", "Constant"}

#: folding anything larger would trade a cheap op for a big weight file
MAX_FOLDED_BYTES = 64 * 1024 * 1024


def _shape_of_static(node: Node) -> np.ndarray | None:
    """ShapeOf needs only its input's shape: fold it whenever that shape is static, which is what
    turns exporter chains (Shape -> Gather -> Concat -> Reshape) into constants."""
    if node.type_name != "ShapeOf" or not node.inputs[0].partial_shape.is_static:
        return None
    dtype = node.output_specs[0].type.np
    return np.asarray(node.inputs[0].partial_shape.to_tuple(), dtype=dtype).reshape(-1)


def folded_values(node: Node) -> list[np.ndarray] | None:
    """The values of ``node``'s outputs when they follow from constants alone (a ShapeOf of a
    static shape, or a node whose inputs are all Constants, by its reference), else None. A
    reference that refuses its inputs leaves the node to run time, where the error names them."""
    from opforge.reference import evaluate_node

    static_shape = _shape_of_static(node)
    if static_shape is not None:
        return [static_shape]
    if not node.inputs or not all(i.node.type_name == "Constant" for i in node.inputs):
        return None
    try:
        return evaluate_node(node, [i.node.constant_value() for i in node.inputs])  # type: ignore[misc]
    except OpforgeError:
        return None


class ConstantFolding(Transformation):
    name: ClassVar[str] = "constant_folding"
    stage: ClassVar[str] = "middle"
    order: ClassVar[int] = 10

    def apply(self, model: Model) -> bool:
        changed = False
        for node in model.get_ordered_ops():
            if not node.inputs:
                continue
            # An input may have just become a constant: inference can now see its value (a
            # Reshape's target shape, say), so refresh the output types before folding on.
            node.validate_and_infer()
            if node.type_name in _NEVER:
                continue
            if node.rt_info.get("disable_constant_folding"):
                continue
            outs = folded_values(node)
            if outs is None:
                continue
            if sum(o.nbytes for o in outs) > MAX_FOLDED_BYTES:
                continue
            for i, arr in enumerate(outs):
                name = node.name if len(outs) == 1 else f"{node.name}:{i}"
                # np.asarray keeps 0-d scalars 0-d (ascontiguousarray would make them 1-d).
                const = Node.create("Constant", [], {"value": np.asarray(arr, order="C")}, name=name)
                const.output(0).set_names(node.output(i).names)
                const.rt_info.update(node.rt_info)
                model.replace_output(node.output(i), const.output(0))
            changed = True
        return changed
