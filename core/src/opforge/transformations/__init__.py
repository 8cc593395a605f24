"""Graph transformations: constant folding, dead-code elimination, pattern replacement.

Pattern nodes are built with the :mod:`opforge.transformations.pattern` module's functions
(``pattern.op``, ``pattern.any_input``, ``pattern.constant``, ``pattern.capture``...).
"""

from opforge.transformations import pattern
from opforge.transformations.base import STAGES, Transformation, run_transformations
from opforge.transformations.constant_folding import ConstantFolding
from opforge.transformations.dead_code import DeadCodeElimination
from opforge.transformations.pattern import (
    GraphRewrite,
    Match,
    MatchContext,
    MatcherPass,
    PatternError,
    PatternNode,
    Predicate,
    TransformationError,
    find_matches,
)

__all__ = [
    "STAGES", "ConstantFolding", "DeadCodeElimination", "GraphRewrite", "Match", "MatchContext",
    "MatcherPass", "PatternError", "PatternNode", "Predicate", "Transformation", "TransformationError",
    "find_matches", "pattern", "run_transformations",
]
