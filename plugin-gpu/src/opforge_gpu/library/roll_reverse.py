"""Reverse and Roll: elements moved as raw bits (``kernels/roll_reverse.cl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.library._support import constant_ints, data_input

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "roll_reverse.cl"
WG = 128


def _roll_reverse(node: Node, lw: Lowering, shifts: list[int], flips: list[int]) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node)
    if not y.size:
        return
    dims = [int(d) for d in x.shape]
    if not dims:
        dims, shifts, flips = [1], [0], [0]
    defines: dict[str, Any] = {"ROLL_REVERSE": 1, "RAW_T": x.storage.raw}
    prm = lw.params([y.size, len(dims), *dims, *shifts, *flips])
    lw.launch(FILE, "roll_reverse", defines, [x, y, prm], [y.size], [WG], node=node)


@kernel("Reverse", supports=data_input)
def lower_reverse(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset.reverse import reverse_axes

    rank = len(node.inputs[0].shape)
    axes = reverse_axes(str(node.attrs.mode),  # type: ignore[attr-defined]
                        [int(v) for v in constant_ints(node, 1).reshape(-1)], rank)
    _roll_reverse(node, lw, [0] * rank, [int(d in axes) for d in range(rank)])


@kernel("Roll", supports=data_input)
def lower_roll(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset.roll import roll_plan

    dims = [int(d) for d in node.inputs[0].shape]
    shift_v = constant_ints(node, 1)
    shifts, axes = roll_plan([int(v) for v in shift_v.reshape(-1)], [int(v) for v in constant_ints(node, 2).reshape(-1)],
                             shift_v.ndim == 0, len(dims))
    total = [0] * len(dims)
    for s, d in zip(shifts, axes):
        total[d] += s
    _roll_reverse(node, lw, [t % d if d else 0 for t, d in zip(total, dims)], [0] * len(dims))
