"""DFT, IDFT, RDFT, IRDFT and DeformableConvolution (``kernels/spectral.cl``).

The Fourier transforms run one direct O(n^2) pass per transformed axis (``dft_axis``: one
work-item per output element), axis by axis through f32 temporaries, as NumPy's ``fftn`` family
that the reference uses: each axis is cropped or zero-padded to its ``signal_size``; RDFT does
its one-sided real-to-complex pass on the last axis first, IRDFT its complex-to-real pass last.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.storage import storage_for

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering
    from opforge_gpu.plan import Tensor

FILE = "spectral.cl"
WG = 64

#: (complex input, complex output, inverse) per op, as opforge.opset._fft
_FFT = {"DFT": (True, True, False), "IDFT": (True, True, True), "RDFT": (False, True, False),
        "IRDFT": (True, False, True)}


def _types(node: Node, ports: range) -> str | None:
    for i in ports:
        t = node.inputs[i].element_type
        if t not in (Type.f32, Type.f16):
            return f"{node.type_name} of {t} has no GPU kernel (f32 and f16 only)"
    return None


def _fft_supports(node: Node) -> str | None:
    bad = _types(node, range(1))
    if bad:
        return bad
    if node.inputs[0].partial_shape.rank is None:
        return "input of unknown rank"
    return None


def _ints(node: Node, i: int) -> list[int]:
    return [int(v) for v in np.asarray(node.inputs[i].node.constant_value()).reshape(-1)]


@kernel(*_FFT, supports=_fft_supports)
def lower_fft(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset import dft, idft, irdft, rdft

    cin, cout, inverse = _FFT[node.type_name]
    x = lw.input(node, 0)
    y = lw.new_output(node)
    rank = len(x.shape)
    op = {"DFT": dft.DFT, "IDFT": idft.IDFT, "RDFT": rdft.RDFT, "IRDFT": irdft.IRDFT}[node.type_name]
    axes = op.norm_axes(_ints(node, 1), rank)
    sig = list(x.shape[:-1] if cin else x.shape)
    sizes = _ints(node, 2) if len(node.inputs) > 2 else [-1] * len(axes)
    n = [sig[a] if s == -1 else s for a, s in zip(axes, sizes)]
    if cin and not cout and sizes[-1] == -1:
        n[-1] = 2 * (sig[axes[-1]] - 1)
    # passes: (axis, transform length, mode 0 c2c / 1 r2c / 2 c2r)
    passes: list[tuple[int, int, int]] = [(a, s, 0) for a, s in zip(axes[:-1], n[:-1])]
    if not cin:
        passes.insert(0, (axes[-1], n[-1], 1))
    elif not cout:
        passes.append((axes[-1], n[-1], 2))
    else:
        passes.append((axes[-1], n[-1], 0))
    f32 = storage_for(Type.f32)
    assert f32 is not None
    cur: Tensor = x
    dims = list(sig)
    for k, (ax, length, mode) in enumerate(passes):
        lin = dims[ax]
        lout = length // 2 + 1 if mode == 1 else length
        dims[ax] = lout
        last = k == len(passes) - 1
        out = y if last else lw.temp([*dims, 2], f32)
        outer, inner = int(np.prod(dims[:ax])), int(np.prod(dims[ax + 1:]))
        defines: dict[str, Any] = {"DFT_AXIS": 1, "MODE": mode, "INVERSE": int(inverse)}
        defines.update(cur.storage.macros("X"))
        defines.update(out.storage.macros("Y"))
        total = outer * lout * inner
        if length <= 0:
            raise ValueError(f"signal size {length} of axis {ax} must be positive")
        prm = lw.params([total, outer, lin, lout, inner, length])
        lw.launch(FILE, "dft_axis", defines, [cur, out, prm], [total], [WG], node=node)
        cur = out


# --- DeformableConvolution --------------------------------------------------------------------
def _deform_supports(node: Node) -> str | None:
    bad = _types(node, range(len(node.inputs)))
    if bad:
        return bad
    if any(node.inputs[i].partial_shape.rank != 4 for i in range(len(node.inputs))):
        return "inputs of unknown rank"
    return None


@kernel("DeformableConvolution", supports=_deform_supports)
def lower_deformable_convolution(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    from opforge.opset.geometry import resolve_pads

    a: Any = node.attrs
    x, off, w = (lw.input(node, i) for i in range(3))
    mask: Any = lw.input(node, 3) if len(node.inputs) > 3 else lw.dummy()
    y = lw.new_output(node)
    _, c, h, wd = x.shape
    c_out, c_g, kh, kw = w.shape
    _, _, oh, ow = y.shape
    pb, _ = resolve_pads([h, wd], [kh, kw], a.strides, a.dilations, a.pads_begin, a.pads_end, a.auto_pad)
    defines: dict[str, Any] = {"DEFORM_CONV": 1, "BILINEAR_PAD": int(bool(a.bilinear_interpolation_pad)),
                               "HAS_MASK": int(len(node.inputs) > 3)}
    defines.update(x.storage.macros("X"))
    defines.update(y.storage.macros("Y"))
    prm = lw.params([y.size, c, h, wd, c_out, oh, ow, c_g, kh, kw, a.group, a.deformable_group,
                     *a.strides, int(pb[0] or 0), int(pb[1] or 0), *a.dilations])
    lw.launch(FILE, "deform_conv", defines, [x, off, w, mask, y, prm], [y.size], [WG], node=node)
