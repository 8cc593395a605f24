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

Only a standard Transpose read by one Split/VariadicSplit alone, cutting its axis into parts of
1, each part read by one Squeeze/Reshape that drops that axis; then per part any run of
Transposes and Multiplies by a constant finite scalar, each read by the next alone. Anything
else is left as it is. OPFORGE_CPU_QKV_SPLIT=0 turns it off."""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
from opforge.graph import Model, Node, Output
from opforge.opset.constant import Constant
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
        split = _sole_reader(uses, tr.output(0))
        if (not tr.op.is_standard or perm is None or y_shape is None or t_shape is None or split is None
                or split.type_name not in ("Split", "VariadicSplit") or not split.op.is_standard
                or split.inputs[0] != tr.output(0)):
            return False
        axis = _const_ints(split.inputs[1])
        rank = len(t_shape)
        if axis is None or len(axis) != 1 or not -rank <= axis[0] < rank:
            return False
        a = axis[0] % rank
        parts = split.outputs()
        if t_shape[a] != len(parts) or any(_static(o) != (*t_shape[:a], 1, *t_shape[a + 1:]) for o in parts):
            return False
        squeezed = t_shape[:a] + t_shape[a + 1:]
        drops: list[Node] = []
        for o in parts:
            s = _sole_reader(uses, o)
            if s is None or s.type_name not in ("Squeeze", "Reshape") or not s.op.is_standard or _static(s.output(0)) != squeezed:
                return False
            drops.append(s)
        # each part's order once the split axis is gone: perm without a, renumbered
        src_axis = perm[a]
        part_perm = [d - (d > src_axis) for j, d in enumerate(perm) if j != a]
        base = str(split.name)

        def const(name: str, values: list[int]) -> Output:
            return Node.create(Constant, [], {"value": np.array(values, np.int64)}, name=f"{base}/{name}").output(0)

        lengths = [1] * len(parts)
        cut_axis = Node.create(Constant, [], {"value": np.array(src_axis, np.int64)}, name=f"{base}/axis").output(0)
        if split.type_name == "Split":
            cut = Node.create(Split, [tr.inputs[0], cut_axis], {"num_splits": len(parts)}, name=f"{base}/before")
        else:
            cut = Node.create(VariadicSplit, [tr.inputs[0], cut_axis, const("lengths", lengths)], {}, name=f"{base}/before")
        flat = const("part_shape", [y_shape[d] for d in range(len(y_shape)) if d != src_axis])
        for i, s in enumerate(drops):
            cur = Node.create(Reshape, [cut.output(i), flat], {"special_zero": False}, name=f"{s.name}/part").output(0)
            order = list(part_perm)
            end, last = s.output(0), s
            while (u := _sole_reader(uses, end)) is not None:
                if u.type_name == "Transpose" and u.op.is_standard and (q := permutation(u)) is not None:
                    order = [order[j] for j in q]
                elif (c := _scalar(u, end)) is not None:
                    cur = Node.create(Multiply, [cur, c], {}, name=f"{u.name}/before").output(0)
                else:
                    break
                end, last = u.output(0), u
            if order != list(range(len(order))):
                cur = Node.create(Transpose, [cur, const(f"order{i}", order)], {}, name=str(last.name)).output(0)
            model.replace_output(end, cur)
        return True
