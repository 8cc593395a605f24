"""The RMS norm exporters decompose (T5, LLaMA) becomes one RMSNormalization.

``y = x / sqrt(mean(x^2) + eps)`` (or ``x * (1 / sqrt(...))``, the ``rsqrt`` of PyTorch's export;
``(.) ** 0.5`` for the sqrt, ``x * (.) ** -0.5``; ``x * x`` for ``x^2``), the mean over trailing axes with kept dimensions, and the scale that
follows it (``y * gamma``, a constant that broadcasts onto the normalised dims only) folded in:
five or six passes over the tensor (and a reduction done twice) become one row loop.
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
from opforge.opset.power import Power
from opforge.opset.reduce_mean import ReduceMean
from opforge.opset.rms_normalization import RMSNormalization
from opforge.opset.sqrt import Sqrt
from opforge.transformations import pattern as p
from opforge.transformations.pattern import Match, MatchContext, MatcherPass, PatternNode, Predicate


def trailing_axes(node: Node) -> int | None:
    """The first axis when ``node`` is ReduceMean(x, axes, keep_dims=True) over a run of axes that
    ends at the last one (e.g. [-1] or [1, 2] of a rank-3 ``x``), else None."""
    if not getattr(node.attrs, "keep_dims", False) or len(node.inputs) != 2:
        return None
    x = node.inputs[0]
    if x.partial_shape.rank is None or x.partial_shape.rank == 0:
        return None
    axes = node.inputs[1].node.constant_value()
    if axes is None or axes.size == 0:
        return None
    rank = x.partial_shape.rank
    got = sorted({int(a) % rank if -rank <= int(a) < rank else -1 for a in np.asarray(axes).reshape(-1)})
    if got[0] < 0 or got != list(range(got[0], rank)):
        return None
    return got[0]


def _is_trailing_mean(out: Output, _ctx: MatchContext) -> bool:
    return out.element_type is Type.f32 and trailing_axes(out.node) is not None


trailing_mean = Predicate(_is_trailing_mean, "trailing_mean")


def _scale_of(gamma: np.ndarray, tail: tuple[int, ...]) -> np.ndarray | None:
    """``gamma`` as RMSNormalization's scale (at most ``len(tail)`` dims) when it broadcasts onto
    the normalised dims ``tail`` alone (leading dims of 1), else None."""
    dims = list(gamma.shape)
    while len(dims) > len(tail):
        if dims[0] != 1:
            return None  # it varies along a leading (not normalised) dim
        dims.pop(0)
    for d, want in zip(dims[::-1], tail[::-1]):
        if d not in (1, want):
            return None
    return np.ascontiguousarray(gamma.reshape(dims), dtype=np.float32)


class FuseRMSNormalization(MatcherPass):
    """The decomposed RMS norm (see the module docstring) -> one RMSNormalization. Every
    intermediate but ``x`` must have one reader; ``eps`` is a non-negative scalar constant. A
    following ``Multiply`` by a constant scale that is the normalised value's only reader becomes
    the op's scale; otherwise the scale is 1."""

    name: ClassVar[str] = "fuse_rms_normalization"
    order: ClassVar[int] = 71

    def pattern(self) -> PatternNode:
        single = p.has_single_consumer
        x = p.capture("x", p.any_input(predicate=p.element_type_is(Type.f32)))
        square = p.any_of(p.op(Power, x, p.scalar(2.0), predicate=single),
                          p.op(Multiply, x, x, predicate=single))
        var = p.capture("mean", p.op(ReduceMean, square, p.constant(), predicate=trailing_mean & single))
        eps = p.capture("eps", p.constant(lambda v: v.size == 1 and float(np.asarray(v).reshape(-1)[0]) >= 0))
        add = p.op(Add, var, eps, predicate=single)
        root = p.any_of(p.op(Sqrt, add, predicate=single), p.op(Power, add, p.scalar(0.5), predicate=single))
        inverse = p.any_of(p.op(Divide, p.scalar(1.0), root, predicate=single),
                           p.op(Power, add, p.scalar(-0.5), predicate=single))
        return p.any_of(p.op(Divide, x, root), p.op(Multiply, x, inverse))

    def callback(self, match: Match, model: Model) -> bool:
        end = match.root.node
        if not match.all_standard:
            return False
        x = match["x"]
        if not x.partial_shape.is_static or not match.root_keeps_shape_of("x"):
            return False  # the division broadcast to a larger shape: not a norm of x
        axis = trailing_axes(match.node("mean"))
        eps = float(np.asarray(match.value("eps")).reshape(-1)[0])
        if axis is None or not np.isfinite(eps):
            return False
        tail = tuple(int(d) for d in x.partial_shape.dims[axis:] if d is not None)  # static (checked above)
        replaced, scale = match.root, np.ones(1, np.float32)
        readers = model.consumers().get(match.root, [])
        if len(readers) == 1 and readers[0][0].type_name == "Multiply" and readers[0][0].op.is_standard:
            mul = readers[0][0]
            other = mul.inputs[1 - readers[0][1]]
            gamma = other.node.constant_value() if other.node.type_name == "Constant" else None
            folded = (_scale_of(np.asarray(gamma), tail)
                      if gamma is not None and other.element_type is Type.f32 else None)
            if folded is not None and mul.output(0).partial_shape == x.partial_shape:
                replaced, scale = mul.output(0), folded
        scale_node = Node.create(Constant, [], {"value": scale}, name=f"{end.name}/rms/scale")
        rms = Node.create(RMSNormalization, [x, scale_node.output(0)], {"axis": axis, "epsilon": eps},
                          name=f"{end.name}/rms")
        rms.rt_info.update(replaced.node.rt_info)
        model.replace_output(replaced, rms.output(0))
        return True
