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


class ConstantFolding(Transformation):
    name: ClassVar[str] = "constant_folding"
    stage: ClassVar[str] = "middle"
    order: ClassVar[int] = 10

    def apply(self, model: Model) -> bool:
        from opforge.reference import evaluate_node

        changed = False
        for node in model.get_ordered_ops():
            if node.type_name in _NEVER or not node.inputs:
                continue
            if node.rt_info.get("disable_constant_folding"):
                continue
            if not all(i.node.type_name == "Constant" for i in node.inputs):
                continue
            try:
                outs = evaluate_node(node, [i.node.constant_value() for i in node.inputs])  # type: ignore[misc]
            except OpforgeError:
                continue  # leave it to run time, where the error will name the inputs
            if sum(o.nbytes for o in outs) > MAX_FOLDED_BYTES:
                continue
            for i, arr in enumerate(outs):
                name = node.name if len(outs) == 1 else f"{node.name}:{i}"
                const = Node.create("Constant", [], {"value": np.asarray(arr, order="C")}, name=name)
                const.output(0).set_names(node.output(i).names)
                const.rt_info.update(node.rt_info)
                model.replace_output(node.output(i), const.output(0))
            changed = True
        return changed
