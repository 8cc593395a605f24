"""Two Transposes in a row become one: ``Transpose(Transpose(x, p1), p2)`` is
``Transpose(x, [p1[j] for j in p2])``, or ``x`` itself when that is the identity.

Attention's K is split into heads ([B, S, H, D] -> [B, H, S, D]) and then transposed for Q x K^T
([B, H, S, D] -> [B, H, D, S]); merged, the one Transpose left is what a device reads through
its MatMul's strides (the CPU does), instead of a pass over K of its own.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from opforge.graph import Model, Node, Output
from opforge.opset.constant import Constant
from opforge.opset.transpose import Transpose
from opforge.transformations import pattern as p
from opforge.transformations.pattern import Match, MatcherPass, PatternNode


def permutation(node: Node) -> list[int] | None:
    """The order Transpose ``node`` applies (an empty order reverses), if it is a constant."""
    order = node.inputs[1].node.constant_value()
    rank = node.inputs[0].partial_shape.rank
    if order is None or rank is None:
        return None
    perm = [int(v) for v in np.asarray(order).reshape(-1)] or list(range(rank))[::-1]
    return perm if sorted(perm) == list(range(rank)) else None


class MergeTransposes(MatcherPass):
    """``Transpose(Transpose(x, p1), p2)`` -> ``Transpose(x, p1[p2])`` (``x`` for the identity)
    when the first Transpose has no other reader and both orders are constants."""

    name: ClassVar[str] = "merge_transposes"
    order: ClassVar[int] = 65

    def pattern(self) -> PatternNode:
        inner = p.capture("inner", p.op(Transpose, p.capture("x"), p.constant(), predicate=p.has_single_consumer))
        return p.op(Transpose, inner, p.constant())

    def callback(self, match: Match, model: Model) -> bool:
        outer = match.root.node
        inner = match.node("inner")
        if not all(n.op.is_standard for n in (outer, inner)):
            return False  # a plugin's op that subclasses a standard one may mean something else
        p1, p2 = permutation(inner), permutation(outer)
        if p1 is None or p2 is None or len(p1) != len(p2):
            return False
        merged = [p1[j] for j in p2]
        x: Output = match["x"]
        if merged == list(range(len(merged))):
            match.replace_root(x)
            return True
        order = Node.create(Constant, [], {"value": np.array(merged, np.int64)}, name=f"{outer.name}/order")
        t = Node.create(Transpose, [x, order.output(0)], {}, name=outer.name)
        t.rt_info.update(outer.rt_info)
        match.replace_root(t)
        return True
