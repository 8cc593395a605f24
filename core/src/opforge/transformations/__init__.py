"""Graph transformations: constant folding, dead-code elimination, pattern replacement."""

from opforge.transformations.base import Transformation, run_transformations

__all__ = ["Transformation", "run_transformations"]
