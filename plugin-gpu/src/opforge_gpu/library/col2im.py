"""Col2Im: sliding blocks summed back into an image (``kernels/col2im.cl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.storage import supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "col2im.cl"
WG = 128


def _col2im_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not supported_type(t) or t is Type.boolean:
        return f"Col2Im of {t} has no GPU kernel"
    return None


@kernel("Col2Im", supports=_col2im_supports)
def lower_col2im(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset.col2im import _blocks

    a: Any = node.attrs
    x = lw.input(node, 0)
    y = lw.new_output(node)
    out = [int(v) for v in np.asarray(node.inputs[1].node.constant_value()).reshape(-1)]
    kern = [int(v) for v in np.asarray(node.inputs[2].node.constant_value()).reshape(-1)]
    nb = _blocks(a, out, kern)
    c = y.shape[-1 - len(out)]
    defines: dict[str, Any] = {"COL2IM": 1}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    lead = 3 - len(out)  # a 2-D image is a volume of depth 1

    def axes(v: list[int], fill: int) -> list[int]:
        return [fill] * lead + [int(e) for e in v]

    prm = lw.params([y.size, c, *axes(out, 1), *axes(kern, 1), *axes(nb, 1), *axes(a.strides, 1),
                     *axes(a.dilations, 1), *axes(a.pads_begin, 0)])
    lw.launch(FILE, "col2im", defines, [x, y, prm], [y.size], [WG], node=node)
