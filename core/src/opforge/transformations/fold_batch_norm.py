"""BatchNormInference after a convolution folds into it: scaled weights plus an Add of the shift.

``BN(conv(x, w)) = conv(x, w * scale) + shift`` with ``scale = gamma / sqrt(var + eps)`` and
``shift = beta - mean * scale``, per output channel. A device that fuses a bias Add into its
convolution (the CPU's oneDNN post-ops) then pays nothing for the normalisation.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from opforge.element_type import Type
from opforge.graph import Model, Node
from opforge.opset.add import Add
from opforge.opset.batch_norm_inference import BatchNormInference
from opforge.opset.constant import Constant
from opforge.opset.convolution import Convolution
from opforge.opset.group_convolution import GroupConvolution
from opforge.transformations import pattern as p
from opforge.transformations.pattern import Match, MatcherPass, PatternNode


class FoldBatchNormIntoConvolution(MatcherPass):
    """Convolution/GroupConvolution (constant f32 weights, one reader) -> BatchNormInference
    (constant parameters) becomes the convolution with scaled weights and an Add of the shift."""

    name: ClassVar[str] = "fold_batch_norm"
    order: ClassVar[int] = 50

    def pattern(self) -> PatternNode:
        conv = p.capture("conv", p.op([Convolution, GroupConvolution], p.any_input(), p.capture("w", p.constant()),
                                      predicate=p.has_single_consumer))
        params = [p.capture(k, p.constant()) for k in ("gamma", "beta", "mean", "var")]
        return p.op(BatchNormInference, conv, *params, predicate=p.element_type_is(Type.f32))

    def callback(self, match: Match, model: Model) -> bool:
        bn = match.root.node
        conv = match.node("conv")
        if not (bn.op.is_standard and conv.op.is_standard):
            return False  # a plugin's op that subclasses a standard one may mean something else
        w = match.value("w")
        if w.dtype != np.float32:
            return False
        gamma, beta, mean, var = (np.asarray(match.value(k), np.float64) for k in ("gamma", "beta", "mean", "var"))
        scale = gamma / np.sqrt(var + float(bn.attrs.epsilon))  # type: ignore[attr-defined]
        shift = beta - mean * scale
        if conv.op is GroupConvolution:  # weights [groups, out per group, in per group, ...]
            ws = scale.reshape(w.shape[0], w.shape[1], *((1,) * (w.ndim - 2)))
        else:  # weights [out, in, ...]
            ws = scale.reshape((-1,) + (1,) * (w.ndim - 1))
        w_node = match.node("w")
        new_w = Node.create(Constant, [], {"value": (w.astype(np.float64) * ws).astype(np.float32)},
                            name=f"{w_node.name}/bn_folded")
        new_conv = Node(conv.op, [conv.inputs[0], new_w.output(0)], conv.attrs, conv.name)
        rank = len(conv.output(0).partial_shape.dims) if conv.output(0).partial_shape.rank is not None else 0
        if rank < 2:
            return False
        bias = Node.create(Constant, [], {"value": shift.astype(np.float32).reshape((1, -1) + (1,) * (rank - 2))},
                           name=f"{bn.name}/shift")
        add = Node.create(Add, [new_conv.output(0), bias.output(0)], name=bn.name)
        match.replace_root(add)
        return True
