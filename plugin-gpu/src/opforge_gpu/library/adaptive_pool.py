"""AdaptiveAvgPool and AdaptiveMaxPool, 1-D to 3-D (``kernels/adaptive_pool.cl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opforge.element_type import Type
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.storage import supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "adaptive_pool.cl"
WG = 128


def _adaptive_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not supported_type(t) or t is Type.boolean or (node.type_name == "AdaptiveAvgPool" and not t.is_float):
        return f"{node.type_name} of {t} has no GPU kernel"
    if node.inputs[0].partial_shape.rank not in (3, 4, 5):
        return "only 1-D, 2-D and 3-D adaptive pooling have a GPU kernel"
    return None


@kernel("AdaptiveAvgPool", "AdaptiveMaxPool", supports=_adaptive_supports)
def lower_adaptive_pool(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node, 0)
    pad = 5 - len(x.shape)
    sp = [1] * pad + list(x.shape[2:])
    osp = [1] * pad + list(y.shape[2:])
    defines: dict[str, Any] = {"ADAPTIVE_POOL": 1, "X_FLOAT": int(x.storage.is_float), "I_T": "int",
                               "WITH_INDICES": 0}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    ind: Any = lw.dummy()
    if node.type_name == "AdaptiveAvgPool":
        defines["AVG"] = 1
    elif (node.id, 1) not in lw.used:
        lw.set_output(node, 1, lw.temp(y.shape, lw.storage(node.output_specs[1].type)))
    else:
        ind = lw.new_output(node, 1)
        defines.update({"I_T": ind.storage.ctype, "WITH_INDICES": 1})
    prm = lw.params([y.size, *sp, *osp])
    lw.launch(FILE, "adaptive_pool", defines, [x, y, ind, prm], [y.size], [WG], node=node)
