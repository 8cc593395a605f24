"""Dead-code elimination.

A model is defined by what its Results reach, so unreachable nodes vanish by construction;
what remains to remove are duplicated constants that identical folding results produced."""

from __future__ import annotations

from typing import ClassVar

from opforge.graph import Model, Output
from opforge.transformations.base import Transformation


class DeadCodeElimination(Transformation):
    name: ClassVar[str] = "dead_code_elimination"
    stage: ClassVar[str] = "middle"
    order: ClassVar[int] = 90

    def apply(self, model: Model) -> bool:
        changed = False
        # Merge byte-identical small constants (shapes, axes) so later passes see one node.
        seen: dict[tuple[str, tuple[int, ...], bytes], Output] = {}
        for node in model.get_ordered_ops():
            v = node.constant_value()
            if v is None or v.nbytes > 1024 or node.output(0).names:
                continue
            key = (v.dtype.str, v.shape, v.tobytes())
            if key in seen:
                model.replace_output(node.output(0), seen[key])
                changed = True
            else:
                seen[key] = node.output(0)
        return changed
