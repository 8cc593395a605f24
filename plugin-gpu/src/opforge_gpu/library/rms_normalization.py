"""RMSNormalization (``kernels/rms_normalization.cl``): one work-group per row of the normalised
dims, in the compute type of the storage (f32 for f16/f32, f64 for f64)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.library._support import float_input
from opforge_gpu.library.movement import contiguous
from opforge_gpu.storage import float_bits, supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "rms_normalization.cl"


def _supports(node: Node) -> str | None:
    t = node.inputs[1].element_type
    if not supported_type(t):
        return f"RMSNormalization with a scale of {t} has no GPU kernel"
    return float_input(node)


def _row_group(length: int) -> int:
    """A power of two from 32 up to 256, no larger than needed to give each item one element."""
    wg = 32
    while wg < length and wg < 256:
        wg *= 2
    return wg


def _scale_layout(tail: list[int], scale_shape: tuple[int, ...]) -> tuple[int, list[int]]:
    """The kernel's scale_mode and the scale's strides over the normalised dims (0 where it
    broadcasts): mode 0 is one value, 1 one value per row element, 2 anything between."""
    aligned = [1] * (len(tail) - len(scale_shape)) + list(scale_shape)
    if int(np.prod(aligned)) == 1:
        return 0, [0] * len(tail)
    if aligned == tail:
        return 1, contiguous(tail)
    own = contiguous(aligned)
    return 2, [0 if d == 1 else s for d, s in zip(aligned, own)]


@kernel("RMSNormalization", supports=_supports)
def lower_rms_normalization(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    s = lw.input(node, 1)
    y = lw.new_output(node)
    shape = list(x.shape)
    axis = int(node.attrs.axis) % len(shape)  # type: ignore[attr-defined]
    tail = shape[axis:]
    length = int(np.prod(tail))
    rows = int(np.prod(shape[:axis]))
    mode, strides = _scale_layout(tail, tuple(s.shape))
    eps = float(node.attrs.epsilon)  # type: ignore[attr-defined]
    defines: dict[str, Any] = {"WG": _row_group(length)}
    defines.update(x.storage.macros("X"))
    defines.update(s.storage.macros("S"))
    defines.update(y.storage.macros("Y"))
    if x.storage.compute == "double":
        defines["EPS_DOUBLE"] = 1
        eps_bits = [int(v) for v in np.array([eps], np.float64).view(np.int32)]
    else:
        eps_bits = [float_bits(eps)]
    prm = lw.params([length, rows * length, mode, len(tail), *tail, *strides, *eps_bits])
    lw.launch(FILE, "rms_normalization", defines, [x, s, y, prm], [rows * defines["WG"]], [defines["WG"]], node=node)
