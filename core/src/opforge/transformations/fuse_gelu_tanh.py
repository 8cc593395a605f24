"""The tanh GELU exporters write out, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``
(GPT-2's and T5's "gelu_new", PyTorch's ``GELU(approximate="tanh")`` before opset 20), becomes
one Gelu(TANH): seven element-wise passes over the tensor become one, which a device may then
fuse into the MatMul before it."""

from __future__ import annotations

import math
from typing import ClassVar

from opforge.element_type import Type
from opforge.graph import Model, Node
from opforge.opset.add import Add
from opforge.opset.gelu import Gelu
from opforge.opset.multiply import Multiply
from opforge.opset.power import Power
from opforge.opset.tanh import Tanh
from opforge.transformations import pattern as p
from opforge.transformations.pattern import Match, MatcherPass, PatternNode

#: sqrt(2 / pi), the tanh argument's scale
_K = math.sqrt(2.0 / math.pi)
#: the cubic term's coefficient
_C = 0.044715


class FuseGeluTanh(MatcherPass):
    """``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` with ``x^3`` as ``Pow(x, 3)``,
    ``x * (x * x)`` or ``(x * x) * x``, and the outer product in the three orders exporters
    write it (as :class:`~opforge.transformations.fuse_gelu_erf.FuseGeluErf`). The constants
    may be rounded (to 1e-4 relative: exporters print sqrt(2/pi) as 0.7978845608 or 0.79788).
    Each intermediate must have one reader, except ``x``."""

    name: ClassVar[str] = "fuse_gelu_tanh"
    order: ClassVar[int] = 61

    def pattern(self) -> PatternNode:
        single = p.has_single_consumer
        x = p.capture("x", p.any_input(predicate=p.element_type_is(Type.f32)))  # one tensor, used 3-4 times
        cube = p.any_of(
            p.op(Power, x, p.scalar(3.0), predicate=single),
            p.op(Multiply, x, p.op(Multiply, x, x, predicate=single), predicate=single),
        )
        term = p.op(Multiply, cube, p.scalar(_C, _C * 1e-4), predicate=single)
        inner = p.op(Multiply, p.op(Add, x, term, predicate=single), p.scalar(_K, _K * 1e-4), predicate=single)
        one_plus = p.op(Add, p.op(Tanh, inner, predicate=single), p.scalar(1.0), predicate=single)
        return p.any_of(
            p.op(Multiply, p.op(Multiply, x, one_plus, predicate=single), p.scalar(0.5)),
            p.op(Multiply, p.op(Multiply, one_plus, p.scalar(0.5), predicate=single), x),
            p.op(Multiply, one_plus, p.op(Multiply, x, p.scalar(0.5), predicate=single)),
        )

    def callback(self, match: Match, model: Model) -> bool:
        end = match.root.node
        if not match.all_standard:
            return False
        x = match["x"]
        if not match.root_keeps_shape_of("x"):
            return False  # a constant broadcast the result to a larger shape than x's
        gelu = Node.create(Gelu, [x], {"approximation_mode": "TANH"}, name=f"{end.name}/gelu")
        gelu.rt_info.update(end.rt_info)
        match.replace_root(gelu)
        return True
