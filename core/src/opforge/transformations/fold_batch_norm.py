"""BatchNormInference after a convolution, or after a MatMul with constant weights, folds into it:
scaled weights plus an Add of the shift.

``BN(conv(x, w)) = conv(x, w * scale) + shift`` with ``scale = gamma / sqrt(var + eps)`` and
``shift = beta - mean * scale``, per output channel. A device that fuses a bias Add into its
convolution (the CPU's oneDNN post-ops) then pays nothing for the normalisation.

The same holds for a MatMul whose channels are its output's last axis: LeViT's ``Linear`` +
``BatchNorm1d`` exports as ``MatMul(x, W)`` -> ``Reshape`` to ``[tokens, C]`` (Flatten) ->
``BatchNormalization`` (channel axis 1 of the 2-D tensor = the MatMul's output columns) ->
``Reshape`` back. The fold scales W's columns and puts the shift Add right after the MatMul (so
the CPU fuses it as the MatMul's bias), before the Reshape, which keeps the last axis.
``OPFORGE_CPU_BN_MATMUL_FOLD=0`` leaves the MatMul form alone (only the CPU runs this pass).
"""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np

from opforge.element_type import Type
from opforge.graph import Model, Node
from opforge.opset.add import Add
from opforge.opset.batch_norm_inference import BatchNormInference
from opforge.opset.constant import Constant
from opforge.opset.convolution import Convolution
from opforge.opset.group_convolution import GroupConvolution
from opforge.opset.mat_mul import MatMul
from opforge.opset.reshape import Reshape
from opforge.transformations import pattern as p
from opforge.transformations.pattern import Match, MatcherPass, PatternNode


def _bn_scale_shift(match: Match, bn: Node) -> tuple[np.ndarray, np.ndarray]:
    gamma, beta, mean, var = (np.asarray(match.value(k), np.float64) for k in ("gamma", "beta", "mean", "var"))
    scale = gamma / np.sqrt(var + float(bn.attrs.epsilon))  # type: ignore[attr-defined]
    return scale, beta - mean * scale


class FoldBatchNormIntoConvolution(MatcherPass):
    """Convolution/GroupConvolution (constant f32 weights, one reader) -> BatchNormInference
    (constant parameters) becomes the convolution with scaled weights and an Add of the shift.

    Also (stop 26) MatMul (constant f32 weights [K, N] or, transposed, [N, K]; one reader) ->
    [Reshape keeping the last axis, one reader] -> BatchNormInference of a 2-D [rows, N] tensor:
    the MatMul with its N columns scaled, an Add of the shift, then the Reshape (see the module's
    docstring). The class keeps its name: the CPU device lists it by that name."""

    name: ClassVar[str] = "fold_batch_norm"
    order: ClassVar[int] = 50

    def pattern(self) -> PatternNode:
        conv = p.capture("conv", p.op([Convolution, GroupConvolution], p.any_input(), p.capture("w", p.constant()),
                                      predicate=p.has_single_consumer))
        mm = p.capture("mm", p.op(MatMul, p.any_input(), p.capture("mw", p.constant()), predicate=p.has_single_consumer))
        flat = p.capture("reshape", p.op(Reshape, mm, p.constant(), predicate=p.has_single_consumer))
        params = [p.capture(k, p.constant()) for k in ("gamma", "beta", "mean", "var")]
        return p.op(BatchNormInference, p.any_of(conv, flat, mm), *params, predicate=p.element_type_is(Type.f32))

    def callback(self, match: Match, model: Model) -> bool:
        if "mm" in match:
            return self._into_mat_mul(match)
        bn = match.root.node
        conv = match.node("conv")
        if not (bn.op.is_standard and conv.op.is_standard):
            return False  # a plugin's op that subclasses a standard one may mean something else
        w = match.value("w")
        if w.dtype != np.float32:
            return False
        scale, shift = _bn_scale_shift(match, bn)
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

    @staticmethod
    def _into_mat_mul(match: Match) -> bool:
        if os.environ.get("OPFORGE_CPU_BN_MATMUL_FOLD", "1") == "0":
            return False
        bn = match.root.node
        mm = match.node("mm")
        reshape = match.node("reshape") if "reshape" in match else None
        if not all(n.op.is_standard for n in (bn, mm, *([reshape] if reshape is not None else []))):
            return False
        w = match.value("mw")
        if w.dtype != np.float32 or w.ndim != 2:
            return False  # (a batched [B, K, N] weight would need a per-batch check; none seen)
        trans_b = bool(mm.attrs.transpose_b)  # type: ignore[attr-defined]
        n = w.shape[0] if trans_b else w.shape[1]
        data = bn.inputs[0].partial_shape
        mm_out = mm.output(0).partial_shape
        # BatchNormInference normalises axis 1: it is the MatMul's columns only for a 2-D input
        # [rows, N]; the Reshape between must keep the last axis (it merges leading ones)
        if data.rank != 2 or data.dims[1] != n or mm_out.rank is None or mm_out.rank < 2 or mm_out.dims[-1] != n:
            return False
        scale, shift = _bn_scale_shift(match, bn)
        if scale.shape != (n,) or shift.shape != (n,):
            return False
        ws = scale.reshape(n, 1) if trans_b else scale.reshape(1, n)
        w_node = match.node("mw")
        new_w = Node.create(Constant, [], {"value": (w.astype(np.float64) * ws).astype(np.float32)},
                            name=f"{w_node.name}/bn_folded")
        new_mm = Node(mm.op, [mm.inputs[0], new_w.output(0)], mm.attrs, mm.name)
        bias = Node.create(Constant, [], {"value": shift.astype(np.float32)}, name=f"{bn.name}/shift")
        add = Node.create(Add, [new_mm.output(0), bias.output(0)], name=bn.name if reshape is None else f"{bn.name}/add")
        top = add
        if reshape is not None:
            top = Node(reshape.op, [add.output(0), reshape.inputs[1]], reshape.attrs, bn.name)
        match.replace_root(top)
        return True
