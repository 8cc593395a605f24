"""The erf GELU exporters write out, ``x * 0.5 * (1 + erf(x / sqrt(2)))``, becomes one Gelu(ERF)."""

from __future__ import annotations

import math
from typing import ClassVar

from opforge.element_type import Type
from opforge.graph import Model, Node
from opforge.opset.add import Add
from opforge.opset.divide import Divide
from opforge.opset.erf import Erf
from opforge.opset.gelu import Gelu
from opforge.opset.multiply import Multiply
from opforge.transformations import pattern as p
from opforge.transformations.pattern import Match, MatcherPass, PatternNode


class FuseGeluErf(MatcherPass):
    """``x * 0.5 * (1 + erf(x / sqrt(2)))`` in the three orders exporters write it (PyTorch,
    TensorFlow, hand-written): ``(x * (1 + erf)) * 0.5``, ``(x * 0.5) * (1 + erf)`` and
    ``((1 + erf) * 0.5) * x``, with ``x / sqrt(2)`` or ``x * (1 / sqrt(2))`` (to 1e-3, as
    exported constants are rounded). Each intermediate must have one reader."""

    name: ClassVar[str] = "fuse_gelu_erf"
    order: ClassVar[int] = 60

    def pattern(self) -> PatternNode:
        x = p.capture("x", p.any_input(predicate=p.element_type_is(Type.f32)))  # one tensor, used twice
        scaled = p.any_of(p.op(Divide, x, p.scalar(math.sqrt(2.0), 1e-3)),
                          p.op(Multiply, x, p.scalar(1 / math.sqrt(2.0), 1e-3)))
        erf = p.op(Erf, scaled, predicate=p.has_single_consumer)
        one_plus = p.op(Add, erf, p.scalar(1.0), predicate=p.has_single_consumer)

        single = p.has_single_consumer
        return p.any_of(
            p.op(Multiply, p.op(Multiply, x, one_plus, predicate=single), p.scalar(0.5)),
            p.op(Multiply, p.op(Multiply, one_plus, p.scalar(0.5), predicate=single), x),
            p.op(Multiply, one_plus, p.op(Multiply, x, p.scalar(0.5))),
        )

    def callback(self, match: Match, model: Model) -> bool:
        end = match.root.node
        if not match.all_standard:
            return False
        gelu = Node.create(Gelu, [match["x"]], {"approximation_mode": "ERF"}, name=f"{end.name}/gelu")
        gelu.rt_info.update(end.rt_info)
        match.replace_root(gelu)
        return True
