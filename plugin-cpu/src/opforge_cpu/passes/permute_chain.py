"""A chain of Reshapes and two or more Transposes -> one Transpose between two Reshapes.

MobileViT unfolds a feature map into patches with Reshape [C*nh, ph, nw, pw] -> Transpose
[0, 2, 1, 3] -> Reshape [1, C, N, P] -> Transpose [0, 3, 2, 1] -> Reshape [P, N, C] and folds
them back the same way. Each Transpose alone moves runs of pw = 2 elements (or gathers C at a
stride of H * W), and the convolution's channels-last output is reordered to NCHW first: 1.4 ms of
a 35 ms bf16 run at 1 thread went to stage 2's four Transposes (559, 131, 201, 545 us) and the
reorder (100 us). The whole chain is one permutation of the input's elements: the input's
dimensions split into factors ([C, nh, ph, nw, pw]) that the output lists in another order
([ph, pw, nh, nw, C]); one Transpose of the refined shape does it.

That one Transpose still gathers C at a stride when C ends up innermost but comes first in the
input. So where the input is a rank-4 convolution's output (which the CPU keeps channels-last:
a Transpose [0, 2, 3, 1] of it is one oneDNN reorder, see kernels/transpose.cpp) the chain reads
it through that Transpose, and where the output is rank 4, read only by convolutions, and its
channels come innermost from the input, the chain ends with Transpose [0, 3, 1, 2] (a
channels-last view that moves nothing): the Transpose in between then moves whole rows of C.

Only chains of standard Reshape/Squeeze/Unsqueeze/Transpose nodes with static shapes, each
intermediate read by the next node alone, not read from or into a MatMul (the emitter folds a
Transpose there into the MatMul's strides), and only when the result has fewer nodes or
Transposes (so the pass reaches a fixed point). OPFORGE_CPU_PERMUTE_CHAIN=0 turns it off."""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
from opforge.graph import Model, Node, Output
from opforge.opset.constant import Constant
from opforge.opset.reshape import Reshape
from opforge.opset.transpose import Transpose
from opforge.transformations import pattern as p
from opforge.transformations.merge_transposes import permutation

_RESHAPES = ("Reshape", "Squeeze", "Unsqueeze")
_CONVS = ("Convolution", "GroupConvolution")


def _is_conv(node: Node) -> bool:
    """A convolution the CPU runs in a oneDNN layout: a standard one, or the int8 pass's
    QuantizedConvolution (u8/i8 nhwc)."""
    if node.type_name == "QuantizedConvolution":
        return bool(getattr(node.op, "cpu_internal", False))
    return node.type_name in _CONVS and node.op.is_standard


# A step of a chain: ("reshape", output shape) or ("transpose", perm).
Step = tuple[str, tuple[int, ...]]


def _static(out: Output) -> tuple[int, ...] | None:
    shape = out.partial_shape
    return tuple(int(d) for d in shape.to_tuple()) if shape.is_static else None


def _link(node: Node) -> Step | None:
    """The chain step ``node`` is, or None if it cannot be part of a chain."""
    if not node.op.is_standard or not node.inputs:
        return None
    out = _static(node.output(0))
    if out is None or _static(node.inputs[0]) is None:
        return None
    if node.type_name in _RESHAPES:
        return ("reshape", out)
    if node.type_name == "Transpose":
        perm = permutation(node)
        return None if perm is None else ("transpose", tuple(perm))
    return None


def _sole_reader(uses: dict[Output, list[tuple[Node, int]]], out: Output) -> Node | None:
    readers = uses.get(out, [])
    if len(readers) != 1 or readers[0][1] != 0 or readers[0][0].type_name == "Result":
        return None
    return readers[0][0]


def _conv_output(x: Output) -> bool:
    """Whether ``x`` is a convolution's output (its bias Add included, which the emitter fuses):
    the CPU keeps it in a oneDNN layout, nhwc or nChw16c, never plain NCHW."""
    node = x.node
    if node.type_name == "Add" and node.op.is_standard:
        data = [i for i in node.inputs if i.node.constant_value() is None]
        if len(data) != 1:
            return False
        node = data[0].node
    return _is_conv(node)


class _Factors:
    """The input's elements as factors: each input dimension splits into factors (sizes > 1),
    and every tensor of the chain lists each factor once, grouped into its dimensions."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.size: list[int] = []
        self.order: list[int] = []  # factor ids in the input's memory order
        self.dims: list[list[int]] = []
        for d in shape:
            ids = [self._new(d)] if d != 1 else []
            self.order += ids
            self.dims.append(ids)

    def _new(self, size: int) -> int:
        self.size.append(size)
        return len(self.size) - 1

    def _split(self, f: int, outer: int) -> tuple[int, int]:
        a, b = self._new(outer), self._new(self.size[f] // outer)
        i = self.order.index(f)
        self.order[i:i + 1] = [a, b]
        for ids in self.dims:
            if f in ids:
                j = ids.index(f)
                ids[j:j + 1] = [a, b]
        return a, b

    def reshape(self, shape: tuple[int, ...]) -> bool:
        flat = [f for ids in self.dims for f in ids]
        dims: list[list[int]] = []
        i = 0
        for s in shape:
            group: list[int] = []
            acc = 1
            while acc < s:
                if i >= len(flat):
                    return False
                f = flat[i]
                if s % (acc * self.size[f]) == 0:
                    group.append(f)
                    acc *= self.size[f]
                    i += 1
                    continue
                need = s // acc
                if s % acc or self.size[f] % need:
                    return False  # the new dimension cuts across factors: not a permutation
                a, b = self._split(f, need)
                flat[i:i + 1] = [a, b]
                group.append(a)
                acc *= need
                i += 1
            if acc != s:
                return False
            dims.append(group)
        if i != len(flat):
            return False
        self.dims = dims
        return True

    def transpose(self, perm: tuple[int, ...]) -> None:
        self.dims = [self.dims[j] for j in perm]


def compose(shape: tuple[int, ...], steps: list[Step]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The one permutation ``steps`` apply to a tensor of ``shape``: the input's shape refined
    into factors (adjacent factors that stay adjacent merged) and the order the output lists them
    in; None if a Reshape of the chain is not a regrouping of whole factors."""
    fs = _Factors(shape)
    for kind, arg in steps:
        if kind == "transpose":
            fs.transpose(arg)
        elif not fs.reshape(arg):
            return None
    out = [f for ids in fs.dims for f in ids]
    src = [fs.order.index(f) for f in out]
    # merge output neighbours that are input neighbours too: the fewest dimensions
    groups: list[list[int]] = []
    for k in src:
        if groups and groups[-1][-1] + 1 == k:
            groups[-1].append(k)
        else:
            groups.append([k])
    by_start = sorted(range(len(groups)), key=lambda g: groups[g][0])
    refined = tuple(int(np.prod([fs.size[fs.order[k]] for k in groups[g]])) for g in by_start)
    perm = tuple(by_start.index(g) for g in range(len(groups)))
    return refined or (1,), perm or (0,)


def _contiguous(perm: tuple[int, ...]) -> bool:
    return perm[-1] == len(perm) - 1


class PermuteChainFusion(p.MatcherPass):
    """Reshape/Transpose chain with 2+ Transposes -> [Transpose NHWC] -> Reshape -> Transpose ->
    Reshape [-> Transpose NCHW] (see the module's doc)."""

    name: ClassVar[str] = "cpu_permute_chain"
    order: ClassVar[int] = 102  # after cpu_rope and cpu_head_slice, which match their own Transposes

    def pattern(self) -> p.PatternNode:
        return p.op("Transpose")

    def callback(self, match: p.Match, model: Model) -> bool:
        if os.environ.get("OPFORGE_CPU_PERMUTE_CHAIN", "1") == "0":
            return False
        root = match.root.node
        if _link(root) is None:
            return False
        uses = model.consumers()
        chain = [root]
        while (prev := chain[0].inputs[0].node) is not None and _link(prev) is not None \
                and _sole_reader(uses, prev.output(0)) is chain[0]:
            chain.insert(0, prev)
        while (nxt := _sole_reader(uses, chain[-1].output(0))) is not None and _link(nxt) is not None:
            chain.append(nxt)
        steps = [s for s in (_link(n) for n in chain) if s is not None]
        n_transposes = sum(kind == "transpose" for kind, _ in steps)
        x, y = chain[0].inputs[0], chain[-1].output(0)
        readers = uses.get(y, [])
        if n_transposes < 1 or x.node.type_name == "MatMul" or any(r.type_name == "MatMul" for r, _ in readers):
            return False
        x_shape, y_shape = _static(x), _static(y)
        if x_shape is None or y_shape is None:
            return False
        plan = self._plan(x, x_shape, y_shape, steps, readers)
        if plan is None:
            return False
        prefix, refined, perm, suffix = plan
        moves = perm != tuple(range(len(perm)))
        if n_transposes == 1:
            # One Transpose between tokens and a convolution (SegFormer's Mix-FFN: [1, HW, C] ->
            # [1, C, HW] -> [1, C, H, W] -> depthwise conv, and back): it moves every element,
            # but read as the channels-last view the convolution wants, or as the NHWC reorder of
            # the convolution's output, nothing is left to permute. Only that rewrite, and not of
            # a chain that already is one (the fixed point).
            ends = self._view_ends(chain)
            if moves or not (prefix or suffix) or (prefix and ends[0]) or (suffix and ends[1]) \
                    or os.environ.get("OPFORGE_CPU_PERMUTE_VIEW", "1") == "0":
                return False
            self._emit(model, chain, x, y_shape, prefix, refined, perm, suffix)
            return True
        new_transposes = int(prefix) + int(moves) + int(suffix)
        new_nodes = new_transposes + 1 + int(moves)  # the Reshapes: refine (if it moves) and final
        if (new_transposes, new_nodes) >= (n_transposes, len(chain)):
            return False  # nothing gained (also: the chain this pass wrote is left as it is)
        self._emit(model, chain, x, y_shape, prefix, refined, perm, suffix)
        return True

    @staticmethod
    def _view_ends(chain: list[Node]) -> tuple[bool, bool]:
        """Whether the chain starts with the NHWC Transpose [0, 2, 3, 1] / ends with the NCHW
        view [0, 3, 1, 2] this pass writes."""
        first, last = (_link(chain[0]), _link(chain[-1]))
        return (first == ("transpose", (0, 2, 3, 1)), last == ("transpose", (0, 3, 1, 2)))

    @staticmethod
    def _plan(x: Output, x_shape: tuple[int, ...], y_shape: tuple[int, ...], steps: list[Step],
              readers: list[tuple[Node, int]]) -> tuple[bool, tuple[int, ...], tuple[int, ...], bool] | None:
        """(read through an NHWC Transpose, refined shape, its permutation, end with an NCHW
        Transpose): the plain composition, or the channels-last one where it gives contiguous rows."""
        plain = compose(x_shape, steps)
        if plain is None:
            return None
        best = (False, *plain, False)
        if _contiguous(plain[1]):
            return best
        prefix = len(x_shape) == 4 and _conv_output(x)
        suffix = (len(y_shape) == 4 and bool(readers)
                  and all(_is_conv(r) and i == 0 for r, i in readers))
        for pre, suf in ((True, False), (False, True), (True, True)):
            if (pre and not prefix) or (suf and not suffix):
                continue
            # read through the prefix: x is Transpose(x_nhwc, [0, 3, 1, 2]); written through the
            # suffix: the chain's output in NHWC is Transpose(y, [0, 2, 3, 1])
            shape = (x_shape[0], x_shape[2], x_shape[3], x_shape[1]) if pre else x_shape
            head: list[Step] = [("transpose", (0, 3, 1, 2))] if pre else []
            tail: list[Step] = [("transpose", (0, 2, 3, 1))] if suf else []
            got = compose(shape, head + steps + tail)
            if got is not None and _contiguous(got[1]):
                return (pre, *got, suf)
        return best

    @staticmethod
    def _emit(model: Model, chain: list[Node], x: Output, y_shape: tuple[int, ...], prefix: bool,
              refined: tuple[int, ...], perm: tuple[int, ...], suffix: bool) -> None:
        last = chain[-1]
        base = str(last.name)
        fused = [str(n.name) for n in chain]

        def const(name: str, values: tuple[int, ...]) -> Output:
            return Node.create(Constant, [], {"value": np.array(values, np.int64)}, name=f"{base}/{name}").output(0)

        def reshape(src: Output, shape: tuple[int, ...], name: str) -> Output:
            return Node.create(Reshape, [src, const(f"{name}/shape", shape)], {"special_zero": False}, name=name).output(0)

        def transpose(src: Output, order: tuple[int, ...], name: str) -> Output:
            return Node.create(Transpose, [src, const(f"{name}/order", order)], {}, name=name).output(0)

        cur = transpose(x, (0, 2, 3, 1), f"{base}/to_nhwc") if prefix else x
        final = (y_shape[0], y_shape[2], y_shape[3], y_shape[1]) if suffix else y_shape
        if perm != tuple(range(len(perm))):
            cur = reshape(cur, refined, f"{base}/refine")
            cur = transpose(cur, perm, f"{base}/permute")
        cur = reshape(cur, final, base if not suffix else f"{base}/nhwc")
        if suffix:
            cur = transpose(cur, (0, 3, 1, 2), base)
        cur.node.rt_info["fused_names"] = fused
        model.replace_output(last.output(0), cur)
