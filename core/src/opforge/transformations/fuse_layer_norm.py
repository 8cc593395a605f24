"""The layer norm exporters decompose becomes MVN over the last axis (``eps`` inside the sqrt).

``d = x - mean(x); y = d / sqrt(mean(d * d) + eps)`` (or ``d * (1 / sqrt(...))``, or ``d ** 2``
for ``d * d``), every reduction over the last axis with kept dimensions. The gamma/beta tail
that follows stays as it is; a device may fuse it into its MVN kernel (the CPU does).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.opset.add import Add
from opforge.opset.constant import Constant
from opforge.opset.divide import Divide
from opforge.opset.multiply import Multiply
from opforge.opset.mvn import MVN
from opforge.opset.power import Power
from opforge.opset.reduce_mean import ReduceMean
from opforge.opset.sqrt import Sqrt
from opforge.opset.subtract import Subtract
from opforge.transformations import pattern as p
from opforge.transformations.pattern import Match, MatchContext, MatcherPass, PatternNode, Predicate


def _is_last_axis_mean(out: Output, _ctx: MatchContext) -> bool:
    """``out`` is ReduceMean(x, [last axis], keep_dims=True) of a static f32 ``x``."""
    node = out.node
    if not getattr(node.attrs, "keep_dims", False) or len(node.inputs) != 2:
        return False
    x = node.inputs[0]
    if x.element_type is not Type.f32 or not x.partial_shape.is_static or not x.partial_shape.dims:
        return False
    axes = node.inputs[1].node.constant_value()
    if axes is None or axes.size != 1:
        return False
    rank = len(x.partial_shape.dims)
    return int(np.asarray(axes).reshape(-1)[0]) in (-1, rank - 1)


last_axis_mean = Predicate(_is_last_axis_mean, "last_axis_mean")


class FuseLayerNormToMVN(MatcherPass):
    """The decomposed layer norm (see the module docstring) -> one MVN. Every intermediate but
    ``d`` must have one reader; ``eps`` is a non-negative scalar constant."""

    name: ClassVar[str] = "fuse_layer_norm_to_mvn"
    order: ClassVar[int] = 70

    def pattern(self) -> PatternNode:
        single = p.has_single_consumer
        x = p.capture("x", p.any_input())
        mean = p.op(ReduceMean, x, p.constant(), predicate=last_axis_mean & single)
        d = p.op(Subtract, x, mean)
        square = p.any_of(p.op(Multiply, d, d, predicate=single),
                          p.op(Power, d, p.scalar(2.0), predicate=single))
        var = p.op(ReduceMean, square, p.constant(), predicate=last_axis_mean & single)
        eps = p.capture("eps", p.constant(lambda v: v.size == 1 and float(np.asarray(v).reshape(-1)[0]) >= 0))
        root = p.op(Sqrt, p.op(Add, var, eps, predicate=single), predicate=single)
        return p.any_of(p.op(Divide, d, root),
                        p.op(Multiply, d, p.op(Divide, p.scalar(1.0), root, predicate=single)))

    def callback(self, match: Match, model: Model) -> bool:
        end = match.root.node
        if not match.all_standard:
            return False
        x = match["x"]
        if not match.root_keeps_shape_of("x"):
            return False  # the division broadcast to a larger shape: not a layer norm of x
        rank = len(x.partial_shape.dims)
        axes = Node.create(Constant, [], {"value": np.array([rank - 1], np.int64)}, name=f"{end.name}/mvn/axes")
        eps = float(np.asarray(match.value("eps")).reshape(-1)[0])
        mvn = Node.create(MVN, [x, axes.output(0)], {"normalize_variance": True, "eps": eps,
                                                     "eps_mode": "inside_sqrt"}, name=f"{end.name}/mvn")
        mvn.rt_info.update(end.rt_info)
        match.replace_root(mvn)
        return True
