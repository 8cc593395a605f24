"""A decoder's rotary position embedding, as torch exports Llama's and GPT-NeoX's, -> one RoPE node
(opforge_cpu.ops.rope). CPU-only, like OpenVINO's internal RoPE: its gain is the CPU kernel that
reads the heads where the projection wrote them; another device would need its own kernel first.

The pattern, rooted at the Add (any operand order of the Add and Multiplies)::

    x  [B, H, S, R]
    Add(Multiply(x, cos), Multiply(Concat(Negative(Slice(x, R/2:R)), Slice(x, 0:R/2), axis=-1), sin))

and around it, each folded in when present:

* partial rotary (GPT-NeoX, rotary_pct < 1): x = Slice(X, 0:R) of the head X [B, H, S, D], read
  by nothing outside the pattern, and the Add's only reader is Concat(Add, Slice(X, R:D),
  axis=-1): the RoPE replaces that Concat (R = D too: GPT-NeoX's export of rotary_pct = 1
  concatenates an empty tail);
* GPT-NeoX's split of Q/K/V from one projection: X = Slice(T, o:o+D) of T [B, H, S, W];
* the head split: X (or T) = Transpose(Y, [0, 2, 1, 3]): the RoPE reads Y [B, S, H, W].

The last two are read through even where K's and V's slices read them too (they stay for those).

Every Slice: one constant axis (the last), step 1, constant bounds (a bound computed from a
model input is a constant here: the CPU plans each value of such an input on its own). cos and sin [1 or B, 1, S, R],
f32 throughout, static shapes. Anything else (another split point, the other half negated, a sign
on the wrong operand, non-constant bounds) is left alone."""

from __future__ import annotations

from typing import ClassVar

from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.transformations import pattern as p
from opforge.transformations.merge_transposes import permutation

from opforge_cpu.ops.rope import RoPE

Uses = dict[Output, list[tuple[Node, int]]]


def _static(out: Output) -> tuple[int, ...] | None:
    shape = out.partial_shape
    return tuple(int(d) for d in shape.to_tuple()) if shape.is_static else None


def _const_ints(out: Output) -> list[int] | None:
    value = out.node.constant_value()
    return None if value is None else [int(v) for v in value.reshape(-1)]


def _standard(node: Node, *types: str) -> bool:
    return node.type_name in types and node.op.is_standard


def _last_axis_slice(node: Node, empty: bool = False) -> tuple[int, int] | None:
    """[start, stop) of a Slice of its input's last axis alone (step 1, constant bounds), else
    None; an empty one only with ``empty``."""
    if not _standard(node, "Slice"):
        return None
    shape = _static(node.inputs[0])
    if shape is None or not shape:
        return None
    rank, dim = len(shape), shape[-1]
    start, stop, step = (_const_ints(node.inputs[i]) for i in (1, 2, 3))
    axes = _const_ints(node.inputs[4]) if len(node.inputs) > 4 else [0] if start is not None and len(start) == 1 else None
    if start is None or stop is None or step is None or axes is None:
        return None
    if not (len(start) == len(stop) == len(step) == len(axes) == 1) or step[0] != 1 or axes[0] not in (-1, rank - 1):
        return None
    lo, hi = (min(max(v + dim if v < 0 else v, 0), dim) for v in (start[0], stop[0]))
    return (lo, hi) if hi > lo or (empty and hi == lo) else None


def _only_readers(uses: Uses, out: Output, allowed: set[int]) -> bool:
    """Whether every reader of ``out`` is one of the ``allowed`` node ids (and it is no model output)."""
    readers = uses.get(out, [])
    return bool(readers) and all(r.id in allowed and r.type_name != "Result" for r, _ in readers)


def _sole_reader(uses: Uses, out: Output) -> Node | None:
    readers = uses.get(out, [])
    return readers[0][0] if len(readers) == 1 and readers[0][0].type_name != "Result" else None


def _rotate_half(uses: Uses, turned: Output, x: Output) -> list[Node] | None:
    """The nodes of Concat(Negative(Slice(x, R/2:R)), Slice(x, 0:R/2), axis=-1) producing ``turned``
    (R: x's last dim), each read only by the next one, else None."""
    cat = turned.node
    shape = _static(x)
    if shape is None or not _standard(cat, "Concat") or len(cat.inputs) != 2:
        return None
    r = shape[-1]
    if r < 2 or r % 2 or int(cat.attrs.axis) not in (-1, len(shape) - 1):  # type: ignore[attr-defined]
        return None
    neg, low = cat.inputs[0].node, cat.inputs[1].node
    if not _standard(neg, "Negative"):
        return None
    high = neg.inputs[0].node
    if (high.inputs[0] != x or low.inputs[0] != x or _last_axis_slice(high) != (r // 2, r)
            or _last_axis_slice(low) != (0, r // 2)):
        return None
    if any(_sole_reader(uses, n.output(0)) is not m for n, m in ((high, neg), (neg, cat), (low, cat))):
        return None
    return [cat, neg, high, low]


def _rotary(uses: Uses, add: Node) -> tuple[Output, Output, Output, list[Node]] | None:
    """(x, cos, sin, the pattern's nodes) when ``add`` is x * cos + rotate_half(x) * sin."""
    if not _standard(add, "Add") or add.inputs[0] == add.inputs[1]:
        return None
    for a, b in ((add.inputs[0], add.inputs[1]), (add.inputs[1], add.inputs[0])):
        ma, mb = a.node, b.node
        if not (_standard(ma, "Multiply") and _standard(mb, "Multiply")) or ma is mb:
            continue
        for turned, sin in ((mb.inputs[0], mb.inputs[1]), (mb.inputs[1], mb.inputs[0])):
            if not _standard(turned.node, "Concat") or not turned.node.inputs:
                continue
            low = turned.node.inputs[1].node if turned.node.inputs[1:] else None
            x = low.inputs[0] if low is not None and low.inputs else None
            if x is None or x not in ma.inputs or ma.inputs[0] == ma.inputs[1]:
                continue
            cos = ma.inputs[1] if ma.inputs[0] == x else ma.inputs[0]
            rot = _rotate_half(uses, turned, x)
            if rot is None or _sole_reader(uses, ma.output(0)) is not add or _sole_reader(uses, mb.output(0)) is not add:
                continue
            return x, cos, sin, [add, ma, mb, *rot]
    return None


class RoPEFusion(p.MatcherPass):
    """x * cos + rotate_half(x) * sin (full or partial rotary, the head split and the Q/K/V column
    slice before it) -> one RoPE node; see the module docstring for the exact pattern."""

    name: ClassVar[str] = "cpu_rope"

    def pattern(self) -> p.PatternNode:
        return p.op("Add")

    def callback(self, match: p.Match, model: Model) -> bool:
        uses = model.consumers()
        found = _rotary(uses, match.root.node)
        if found is None:
            return False
        x, cos, sin, nodes = found
        add = nodes[0]
        xs, cs, ss, ys = _static(x), _static(cos), _static(sin), _static(add.output(0))
        if xs is None or cs is None or ss is None or len(xs) != 4 or ys != xs:
            return False
        b, _, s, r = xs
        if cs != ss or cs[1:] != (1, s, r) or cs[0] not in (1, b):
            return False
        if any(t.element_type is not Type.f32 for t in (x, cos, sin, add.output(0))):
            return False
        ids = {n.id for n in nodes}
        out = add.output(0)
        head, d, offset = x, r, 0
        # partial rotary: x = X[..., :R], the result concatenated with X[..., R:]
        part = _last_axis_slice(x.node)
        cat = _sole_reader(uses, out)
        if part == (0, r) and cat is not None and _standard(cat, "Concat") and len(cat.inputs) == 2 \
                and cat.inputs[0] == out and int(cat.attrs.axis) in (-1, 3):  # type: ignore[attr-defined]
            tail = cat.inputs[1].node
            full = _static(x.node.inputs[0])
            if (full is not None and tail.inputs[0] == x.node.inputs[0] and _last_axis_slice(tail, empty=True) == (r, full[-1])
                    and _sole_reader(uses, tail.output(0)) is cat and _only_readers(uses, x, ids)):
                head, d = x.node.inputs[0], full[-1]
                nodes += [x.node, tail, cat]
                ids |= {x.node.id, tail.id, cat.id}
                out = cat.output(0)
        # GPT-NeoX's Q/K/V columns: the head = T[..., o:o+D]. Read through whatever other
        # readers the Slice and the Transpose below have (K's and V's); they are named among the
        # fused nodes only when the RoPE was their last reader
        cols = _last_axis_slice(head.node)
        if cols is not None and cols[1] - cols[0] == d and head.element_type is Type.f32:
            if _only_readers(uses, head, ids):
                nodes.append(head.node)
                ids.add(head.node.id)
            head, offset = head.node.inputs[0], cols[0]
        # the head split: read [B, S, H, W] before the Transpose
        layout = "bhsd"
        tr = head.node
        if (_standard(tr, "Transpose") and permutation(tr) == [0, 2, 1, 3] and tr.inputs[0].element_type is Type.f32
                and _static(tr.inputs[0]) is not None):
            if _only_readers(uses, head, ids):
                nodes.append(tr)
            head, layout = tr.inputs[0], "bshd"
        attrs = {"rotary_dims": r, "head_size": d, "input_layout": layout, "column_offset": offset}
        new = Node.create(RoPE, [head, cos, sin], attrs, name=out.node.name)
        new.rt_info["fused_names"] = [str(n.name) for n in reversed(nodes)]
        model.replace_output(out, new.output(0))
        return True
