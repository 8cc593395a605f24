"""Identity: a view of its input's buffer (no kernel)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.library._support import data_input

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering


@kernel("Identity", supports=data_input)
def lower_identity(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    # A view of the input's buffer, as Reshape: nothing writes a tensor after it is produced.
    from opforge_gpu.lowering import static_shape

    x = lw.input(node, 0)
    lw.set_output(node, 0, lw.view(x, static_shape(node, 0)))
