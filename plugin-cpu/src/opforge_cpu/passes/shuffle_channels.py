"""ShuffleNet's channel shuffle -> one ShuffleChannels node (opforge_cpu.ops.shuffle_channels)."""

from __future__ import annotations

from typing import ClassVar

from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.transformations import pattern as p
from opforge.transformations.merge_transposes import permutation

from opforge_cpu.ops.shuffle_channels import ShuffleChannels


def _static(out: Output) -> tuple[int, ...] | None:
    shape = out.partial_shape
    return tuple(int(d) for d in shape.to_tuple()) if shape.is_static else None


def _sole_reader(uses: dict[Output, list[tuple[Node, int]]], out: Output, port: int = 0) -> Node | None:
    readers = uses.get(out, [])
    if len(readers) != 1 or readers[0][1] != port or readers[0][0].type_name == "Result":
        return None
    return readers[0][0]


def _const_ints(out: Output) -> list[int] | None:
    value = out.node.constant_value()
    return None if value is None else [int(v) for v in value.reshape(-1)]


def _channel_split(node: Node, c: int) -> list[int] | None:
    """The channel counts a Split/VariadicSplit of the channels (axis 1 of a rank-4 tensor) makes."""
    if not node.op.is_standard or node.type_name not in ("Split", "VariadicSplit"):
        return None
    axis = _const_ints(node.inputs[1])
    if axis is None or len(axis) != 1 or axis[0] not in (1, -3):
        return None
    sizes = [s[1] for s in (_static(o) for o in node.outputs()) if s is not None]
    return sizes if len(sizes) == len(node.outputs()) and sum(sizes) == c else None


class ShuffleChannelsFusion(p.MatcherPass):
    """Concat(x_1, ..., x_n) of the channels -> Reshape [N, g, C/g, H, W] -> Transpose
    [0, 2, 1, 3, 4] -> Reshape [N, C, H, W] (-> Split/VariadicSplit of the channels) ->
    ShuffleChannels(x_1, ..., x_n): one step that reads the branches and writes the shuffled parts,
    as OpenVINO's ShuffleChannels node, instead of a concatenating copy (with a reorder of each
    nhwc branch to nchw), a transposing copy and a copy per part. Only this exact chain, f32,
    static shapes, every intermediate read by the next op alone; anything else is left alone."""

    name: ClassVar[str] = "cpu_shuffle_channels"

    def pattern(self) -> p.PatternNode:
        return p.op("Transpose")

    def callback(self, match: p.Match, model: Model) -> bool:
        tr = match.root.node
        uses = model.consumers()
        first, cat = tr.inputs[0].node, tr.inputs[0].node.inputs[0].node if tr.inputs[0].node.inputs else None
        second = _sole_reader(uses, tr.output(0))
        if (cat is None or first.type_name != "Reshape" or cat.type_name != "Concat" or second is None
                or second.type_name != "Reshape" or not all(n.op.is_standard for n in (tr, first, cat, second))
                or _sole_reader(uses, cat.output(0)) is not first or _sole_reader(uses, first.output(0)) is not tr):
            return False
        x, grouped, y = _static(cat.output(0)), _static(first.output(0)), _static(second.output(0))
        if x is None or grouped is None or y is None or len(x) != 4 or cat.output(0).element_type is not Type.f32:
            return False
        n, c, h, w = x
        axis = int(cat.attrs.axis)  # type: ignore[attr-defined]
        if axis not in (1, -3) or permutation(tr) != [0, 2, 1, 3, 4] or len(grouped) != 5 or y != x:
            return False
        g = grouped[1]
        if g < 1 or c % g or grouped != (n, g, c // g, h, w):
            return False
        outs = [second.output(0)]
        splits = [c]
        split = _sole_reader(uses, second.output(0))
        if split is not None and (sizes := _channel_split(split, c)) is not None:
            outs, splits = split.outputs(), sizes
        fused = [str(m.name) for m in (cat, first, tr, second)] + ([split.name] if len(outs) > 1 and split else [])
        new = Node.create(ShuffleChannels, list(cat.inputs), {"group": g, "splits": splits}, name=outs[0].node.name)
        new.rt_info["fused_names"] = fused
        for i, out in enumerate(outs):
            model.replace_output(out, new.output(i))
        return True
