"""timm's fused QKV head split -> a split of the projection, the head Transposes folded into the
attention MatMuls.

timm's Attention (DeiT, ViT, MobileViT) splits one QKV projection as Reshape [B, N, 3, H, D] ->
Transpose [2, 0, 3, 1, 4] -> Split into three [1, B, H, N, D] -> Squeeze each, then scales Q and
K^T by a constant (torch's export of scaled_dot_product_attention multiplies both by
sqrt(1/sqrt(D))) and transposes K once more. Run as written that is a Transpose of the whole
[B, N, 3, H, D] tensor, a copy per part, K's second Transpose and two scaling passes, each a
step of its own: timm_deit_tiny bf16, per layer 44 + 24 + 31 + 7 + 7 us at 1 thread and
58 + 43 + 51 + 6 + 9 us at 2 (the small steps scale worse than the MatMuls around them).

Split along the projection's own axis first (axis perm[a]; each part a copy of H * D columns of
every row, as the Split did), then each part is [B, N, H, D]: its scalar Multiplies are taken
before the one Transpose that is left (a scalar product commutes with moving the elements, bit
for bit), and that Transpose (the head split, K's [B, H, D, N] merged in) is what the Q x K^T
and P x V MatMuls read through their strides (emit.py ``_folded_transpose``), as they read a
BERT export's heads: no transposing pass at all.

torchvision's Swin takes the parts as qkv[0], qkv[1], qkv[2] (a Gather of one scalar index
each) and scales Q alone; those Gathers are taken from the projection's axis the same way.

Only a standard Transpose read by one Split/VariadicSplit alone, cutting its axis into parts of
1, each part read by one Squeeze/Reshape that drops that axis, or read only by Gathers of one
constant scalar index along one axis; then per part any run of Transposes and Multiplies by a
constant finite scalar, each read by the next alone. Anything else is left as it is.
OPFORGE_CPU_QKV_SPLIT=0 turns it off."""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
from opforge.graph import Model, Node, Output
from opforge.opset.constant import Constant
from opforge.opset.gather import Gather
from opforge.opset.multiply import Multiply
from opforge.opset.reshape import Reshape
from opforge.opset.split import Split
from opforge.opset.transpose import Transpose
from opforge.opset.variadic_split import VariadicSplit
from opforge.transformations import pattern as p
from opforge.transformations.merge_transposes import permutation


def _static(out: Output) -> tuple[int, ...] | None:
    shape = out.partial_shape
    return tuple(int(d) for d in shape.to_tuple()) if shape.is_static else None


def _sole_reader(uses: dict[Output, list[tuple[Node, int]]], out: Output) -> Node | None:
    readers = uses.get(out, [])
    if len(readers) != 1 or readers[0][0].type_name == "Result":
        return None
    return readers[0][0]


def _scalar(node: Node, cur: Output) -> Output | None:
    """The constant operand of ``node`` when it is ``cur * c`` (either order) for one finite
    float ``c`` that leaves ``cur``'s shape as it is."""
    if node.type_name != "Multiply" or not node.op.is_standard or node.inputs[0] == node.inputs[1]:
        return None
    other = node.inputs[1] if node.inputs[0] == cur else node.inputs[0]
    v = other.node.constant_value()
    if (v is None or v.size != 1 or v.dtype.kind != "f" or not np.isfinite(v).all()
            or _static(node.output(0)) != _static(cur) or v.ndim > len(cur.partial_shape.to_tuple())):
        return None
    return other


def _const_ints(out: Output) -> list[int] | None:
    value = out.node.constant_value()
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


class QkvSplitBeforeTranspose(p.MatcherPass):
    """Transpose(Y, perm) -> Split(axis a) -> Squeeze -> [Transpose | Multiply(scalar)]* ->
    Split(Y, axis perm[a]) -> Reshape -> Multiply* -> one Transpose per part."""

    name: ClassVar[str] = "cpu_qkv_split"
    order: ClassVar[int] = 103  # after cpu_permute_chain (102): a chain read by a MatMul it leaves alone

    def pattern(self) -> p.PatternNode:
        return p.op("Transpose")

    def callback(self, match: p.Match, model: Model) -> bool:
        if os.environ.get("OPFORGE_CPU_QKV_SPLIT", "1") == "0":
            return False
        tr = match.root.node
        perm = permutation(tr)
        y_shape, t_shape = _static(tr.inputs[0]), _static(tr.output(0))
        uses = model.consumers()
        readers = uses.get(tr.output(0), [])
        if not tr.op.is_standard or perm is None or y_shape is None or t_shape is None or not readers:
            return False
        if len(readers) == 1 and readers[0][0].type_name in ("Split", "VariadicSplit"):
            return self._split(model, uses, tr, perm, y_shape, t_shape, readers[0][0])
        return self._gathers(model, uses, tr, perm, t_shape, [r for r, _ in readers])

    def _split(self, model: Model, uses: dict[Output, list[tuple[Node, int]]], tr: Node, perm: list[int],
               y_shape: tuple[int, ...], t_shape: tuple[int, ...], split: Node) -> bool:
        """timm's Split -> Squeeze of each part."""
        if not split.op.is_standard or split.inputs[0] != tr.output(0):
            return False
        a = _axis(split.inputs[1], len(t_shape))
        parts = split.outputs()
        if a is None or t_shape[a] != len(parts) or any(_static(o) != (*t_shape[:a], 1, *t_shape[a + 1:]) for o in parts):
            return False
        squeezed = t_shape[:a] + t_shape[a + 1:]
        drops: list[Node] = []
        for o in parts:
            s = _sole_reader(uses, o)
            if s is None or s.type_name not in ("Squeeze", "Reshape") or not s.op.is_standard or _static(s.output(0)) != squeezed:
                return False
            drops.append(s)
        src_axis = perm[a]
        base = str(split.name)
        cut_axis = _const(f"{base}/axis", np.array(src_axis, np.int64))
        if split.type_name == "Split":
            cut = Node.create(Split, [tr.inputs[0], cut_axis], {"num_splits": len(parts)}, name=f"{base}/before")
        else:
            lengths = _const(f"{base}/lengths", np.ones(len(parts), np.int64))
            cut = Node.create(VariadicSplit, [tr.inputs[0], cut_axis, lengths], {}, name=f"{base}/before")
        flat = _const(f"{base}/part_shape", np.array([y_shape[d] for d in range(len(y_shape)) if d != src_axis], np.int64))
        for i, s in enumerate(drops):
            part = Node.create(Reshape, [cut.output(i), flat], {"special_zero": False}, name=f"{s.name}/part").output(0)
            _finish(model, uses, part, s, _part_perm(perm, a))
        return True

    def _gathers(self, model: Model, uses: dict[Output, list[tuple[Node, int]]], tr: Node, perm: list[int],
                 t_shape: tuple[int, ...], gathers: list[Node]) -> bool:
        """torchvision's Swin: qkv[0], qkv[1], qkv[2], each a Gather of one scalar index."""
        rank = len(t_shape)
        picks: list[tuple[Node, Output]] = []
        a = None
        for g in gathers:
            if g.type_name != "Gather" or not g.op.is_standard or g.inputs[0] != tr.output(0) or g.inputs[1] == tr.output(0):
                return False
            ga = _axis(g.inputs[2], rank)
            value = g.inputs[1].node.constant_value()
            if (ga is None or (a is not None and ga != a) or value is None or np.asarray(value).ndim != 0
                    or int(getattr(g.attrs, "batch_dims", 0)) != 0):
                return False
            a = ga
            picks.append((g, g.inputs[1]))
        if a is None:
            return False
        src_axis = perm[a]
        for g, index in picks:
            axis = _const(f"{g.name}/axis", np.array(src_axis, np.int64))
            part = Node.create(Gather, [tr.inputs[0], index, axis], {"batch_dims": 0}, name=f"{g.name}/before").output(0)
            _finish(model, uses, part, g, _part_perm(perm, a))
        return True


def _axis(out: Output, rank: int) -> int | None:
    axis = _const_ints(out)
    if axis is None or len(axis) != 1 or not -rank <= axis[0] < rank:
        return None
    return axis[0] % rank


def _const(name: str, value: np.ndarray) -> Output:
    return Node.create(Constant, [], {"value": value}, name=name).output(0)


def _part_perm(perm: list[int], a: int) -> list[int]:
    """A part's order once the split axis ``a`` of the Transpose's output is gone: ``perm``
    without it, renumbered."""
    return [d - (d > perm[a]) for j, d in enumerate(perm) if j != a]


def _finish(model: Model, uses: dict[Output, list[tuple[Node, int]]], part: Output, drop: Node, order: list[int]) -> None:
    """``part`` (the part in the projection's order) stands for ``drop``'s output: the run of
    Transposes and scalar Multiplies after ``drop`` becomes the Multiplies, then one Transpose."""
    end, last = drop.output(0), drop
    while (u := _sole_reader(uses, end)) is not None:
        if u.type_name == "Transpose" and u.op.is_standard and (q := permutation(u)) is not None:
            order = [order[j] for j in q]
        elif (c := _scalar(u, end)) is not None:
            part = Node.create(Multiply, [part, c], {}, name=f"{u.name}/before").output(0)
        else:
            break
        end, last = u.output(0), u
    if order != list(range(len(order))):
        part = Node.create(Transpose, [part, _const(f"{last.name}/order", np.array(order, np.int64))], {},
                           name=str(last.name)).output(0)
    model.replace_output(end, part)
