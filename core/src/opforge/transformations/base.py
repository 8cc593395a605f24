"""The transformation interface and the deterministic pass runner."""

from __future__ import annotations

import abc
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from opforge.graph import Model

STAGES = ("front", "middle", "back")


class Transformation(abc.ABC):
    """A graph pass. ``apply`` edits the model in place and returns True if it changed it."""

    name: ClassVar[str] = ""
    stage: ClassVar[str] = "middle"
    #: lower runs first within a stage
    order: ClassVar[int] = 100
    #: if False, the pass is registered but only runs when asked for by name
    enabled: ClassVar[bool] = True

    @abc.abstractmethod
    def apply(self, model: Model) -> bool:
        """Transform ``model`` in place; return whether anything changed."""

    def sort_key(self) -> tuple[int, int, str]:
        return (STAGES.index(self.stage) if self.stage in STAGES else len(STAGES), self.order, self.name)


def run_transformations(model: Model, passes: Iterable[Transformation]) -> list[str]:
    """Run passes in their deterministic order; returns the names of those that changed the model."""
    changed = []
    for p in sorted(passes, key=Transformation.sort_key):
        if p.apply(model):
            changed.append(p.name)
    return changed
