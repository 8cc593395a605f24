"""Slices of a head-split Transpose's last axis -> the same slices before it (GPT-NeoX's V).

GPT-NeoX splits Q, K and V out of one projection after the head split: Transpose(Y, [0, 2, 1, 3])
[B, H, S, 3 D], then three column Slices. Once passes/rope.py reads Q and K from Y itself, the
Transpose of the whole [B, S, H, 3 D] tensor is still computed for V alone, and V's Slice copies
a third of it again. With the Slice taken of Y first (a copy of D of every 3 D columns) the
Transpose moves D columns instead of 3 D, and where a MatMul reads it (attention's P x V) the
emitter folds it into that MatMul's strides: no transposing pass at all.

Only when every reader of the Transpose is such a Slice of its last axis (so the Transpose goes
away) and the Transpose keeps the last axis last; runs after passes/rope.py (``order``)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from opforge.graph import Model, Node
from opforge.opset.constant import Constant
from opforge.opset.slice import Slice
from opforge.opset.transpose import Transpose
from opforge.transformations import pattern as p
from opforge.transformations.merge_transposes import permutation

from opforge_cpu.passes.rope import _last_axis_slice, _standard, _static


class SliceBeforeTranspose(p.MatcherPass):
    """Transpose(Y, perm) -> Slice_i(last axis) for every reader -> Transpose(Slice_i(Y), perm)."""

    name: ClassVar[str] = "cpu_head_slice"
    order: ClassVar[int] = 101  # after cpu_rope (100), which reads Q and K through the Transpose

    def pattern(self) -> p.PatternNode:
        return p.op("Transpose")

    def callback(self, match: p.Match, model: Model) -> bool:
        tr = match.root.node
        perm = permutation(tr)
        shape = _static(tr.inputs[0])
        if not _standard(tr, "Transpose") or perm is None or shape is None or len(shape) < 2 or perm[-1] != len(shape) - 1:
            return False
        readers = model.consumers().get(tr.output(0), [])
        cuts = [(r, b) for r, i in readers if i == 0 and (b := _last_axis_slice(r)) is not None]
        if not readers or len(cuts) != len(readers):
            return False
        order = Node.create(Constant, [], {"value": np.array(perm, np.int64)}, name=f"{tr.name}/order")
        for s, (lo, hi) in cuts:
            consts = [Node.create(Constant, [], {"value": np.array([v], np.int64)}, name=f"{s.name}/{k}")
                      for k, v in (("start", lo), ("stop", hi), ("step", 1), ("axes", len(shape) - 1))]
            cut = Node.create(Slice, [tr.inputs[0], *(c.output(0) for c in consts)], {}, name=f"{s.name}/before")
            moved = Node.create(Transpose, [cut.output(0), order.output(0)], {}, name=s.name)
            model.replace_output(s.output(0), moved.output(0))
        return True
