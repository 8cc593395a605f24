"""Eye, its sizes and diagonal known when the plan is made (``kernels/eye.cl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.storage import supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "eye.cl"
WG = 128


def _eye_supports(node: Node) -> str | None:
    t = node.output_specs[0].type
    if not supported_type(t):
        return f"Eye of {t} has no GPU kernel"
    return None


@kernel("Eye", supports=_eye_supports)
def lower_eye(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    y = lw.new_output(node)
    rows, cols = (y.shape[-2], y.shape[-1])
    k = int(np.asarray(node.inputs[2].node.constant_value()).reshape(-1)[0])
    defines: dict[str, Any] = {"EYE": 1}
    defines.update(y.storage.macros("Y"))
    lw.launch(FILE, "eye", defines, [y, lw.params([y.size, rows, cols, k])], [y.size], [WG], node=node)
