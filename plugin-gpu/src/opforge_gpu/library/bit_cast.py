"""BitCast (``kernels/bit_cast.cl``): a copy of the raw element bits into the output type."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from opforge.element_type import Type
from opforge.errors import UnsupportedOpError
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.plan import ScalarArg
from opforge_gpu.storage import supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "bit_cast.cl"
WG = 128


def _supports(node: Node) -> str | None:
    for t in (node.inputs[0].element_type, node.output_specs[0].type):
        if not supported_type(t):
            return f"BitCast of {t} has no GPU kernel"
    if not node.inputs[0].partial_shape.is_static:
        return "input of dynamic shape"
    return None


@kernel("BitCast", supports=_supports)
def lower_bit_cast(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    src, dst = node.inputs[0].element_type, node.output_specs[0].type
    s_in, s_out = lw.storage(src), lw.storage(dst)
    # With INFERENCE_PRECISION_HINT=f16 an f32 tensor is stored as half: its f32 bits are gone.
    if s_in.np != src.np or s_out.np != dst.np:
        raise UnsupportedOpError(
            f"node '{node.name}' (BitCast): {src} -> {dst} needs the exact bits, but this device "
            "stores f32 as f16 (INFERENCE_PRECISION_HINT=f16); run it in f32")
    x = lw.input(node, 0)
    y = lw.new_output(node)
    defines = {"RAW_T": s_in.raw, "TO_BOOL": int(dst is Type.boolean)}
    lw.launch(FILE, "bit_cast", defines, [x, y, ScalarArg(np.int32(y.size))], [y.size], [WG], node=node)
