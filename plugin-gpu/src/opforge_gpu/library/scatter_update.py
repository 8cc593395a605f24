"""ScatterUpdate: the last duplicate index wins, out-of-range indices are reported
(``kernels/scatter_update.cl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.library._support import constant_ints, data_input

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "scatter_update.cl"
WG = 128


def _scatter_update_supports(node: Node) -> str | None:
    bad = data_input(node)
    if bad:
        return bad
    if node.inputs[1].element_type.ir not in ("i32", "i64"):
        return f"indices of type {node.inputs[1].element_type} (i32/i64 only)"
    return None


@kernel("ScatterUpdate", supports=_scatter_update_supports)
def lower_scatter_update(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge_gpu.library.index import copy_all

    data, idx, upd = (lw.input(node, i) for i in range(3))
    y = lw.new_output(node)
    copy_all(lw, node, data, y)
    rank = len(data.shape)
    axis = int(constant_ints(node, 3).reshape(-1)[0])
    axis = axis + rank if axis < 0 else axis
    outer = int(np.prod(data.shape[:axis]))
    inner = int(np.prod(data.shape[axis + 1:]))
    n = idx.size
    if not n or not outer * inner:
        return
    defines: dict[str, Any] = {"SCATTER_UPDATE": 1, "INDEX_ERRORS": 1, "RAW_T": y.storage.raw,
                               "I_T": idx.storage.ctype}
    prm = lw.params([outer * inner, inner, data.shape[axis], n, axis])
    check = lw.index_check("index {value} is out of range for axis {which} of size {size} (expected {low}..{high})",
                           negative=False)
    lw.launch(FILE, "scatter_update", defines, [upd, idx, y, prm, *check], [outer * inner], [WG], node=node)
