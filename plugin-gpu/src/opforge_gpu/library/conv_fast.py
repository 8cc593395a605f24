"""Faster paths of 2-D convolution than the plain implicit GEMM of ``gemm.cl``:

* **Winograd F(2x2, 3x3)** (``winograd.cl``) for 3x3 stride-1 undilated convolutions with
  constant filters and no groups: an input transform, 16 GEMMs (the batched ``matmul`` kernel) on
  filters transformed on the host, an output transform applying the epilogue. 2.25 times fewer
  multiply-adds, for three passes over memory: chosen when channels are many enough to amortise.
* **split-K** of the implicit GEMM, for layers whose output is too small to give every compute
  unit a tile (late layers at batch 1): each work-group sums a slice of K into a partial buffer,
  a second kernel adds the slices and applies the epilogue.

:func:`forced` pins a path (tests, ``benchmarks/bench_conv_layers.py``): ``"gemm"`` is the
implicit GEMM alone, ``"winograd"`` takes Winograd wherever it applies, ``"splitk"`` splits every
GEMM convolution's K in (up to) 4.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.element_type import Type

from opforge_gpu.storage import float_bits, storage_for

if TYPE_CHECKING:
    from opforge.graph import Node

    from opforge_gpu.lowering import Lowering
    from opforge_gpu.plan import Tensor

#: None (the plugin decides), "default" (same), "gemm", "winograd", "splitk"
_FORCED: str | None = None
#: a GEMM tile (TM, TN, TK, WPTM, WPTN) every convolution and MatMul uses (tests on CPU devices)
_FORCED_TILE: tuple[int, int, int, int, int] | None = None

#: Winograd pays when both channel counts reach this (GEMMs of K = Cin, three memory passes)
WINO_MIN_CHANNELS = 16
#: and when its GEMM work is under this share of the direct GEMM's (the transforms cost the rest)
WINO_MAX_COST = 0.8

# F(2x2, 3x3) filter transform G (4 x 3)
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


@contextlib.contextmanager
def forced(path: str | None, tile: tuple[int, int, int, int, int] | None = None) -> Iterator[None]:
    """Pin the convolution path of the plans built inside (``gemm``, ``winograd``, ``splitk``)
    and, optionally, the GEMM tile (a GPU tile on a CPU device, to test it)."""
    global _FORCED, _FORCED_TILE
    if path not in (None, "default", "gemm", "winograd", "splitk"):
        raise ValueError(f"unknown convolution path {path!r}")
    old = _FORCED, _FORCED_TILE
    _FORCED, _FORCED_TILE = (None if path == "default" else path), tile
    try:
        yield
    finally:
        _FORCED, _FORCED_TILE = old


def forced_tile() -> tuple[int, int, int, int, int] | None:
    return _FORCED_TILE


# --- Winograd F(2x2, 3x3) -------------------------------------------------------------------
def winograd_applies(lw: Lowering, x: Tensor, geo: dict[str, int], groups: int, cin: int, cout: int,
                     filters_known: bool, out_hw: tuple[int, int]) -> bool:
    if _FORCED in ("gemm", "splitk") or not filters_known or groups != 1 or len(x.shape) != 4:
        return False
    if x.storage.compute != "float":
        return False
    if (geo["KH"], geo["KW"], geo["SH"], geo["SW"], geo["DH"], geo["DW"]) != (3, 3, 1, 1, 1, 1):
        return False
    tiles = x.shape[0] * -(-out_hw[0] // 2) * -(-out_hw[1] // 2)
    if 16 * max(cin, cout) * tiles >= 2**31:
        return False
    if _FORCED == "winograd":
        return True
    if min(cin, cout) < WINO_MIN_CHANNELS:
        return False
    # GEMM columns are padded to whole tiles: with few output tiles (small images, late layers at
    # batch 1) Winograd's 16 GEMMs of P columns can cost more than the direct one of N*OH*OW
    from opforge_gpu.library.nn import _tile

    pixels = x.shape[0] * out_hw[0] * out_hw[1]
    tn_w = _tile(lw, cout, tiles, 16)[1]
    tn_d = _tile(lw, cout, pixels, 1, split_k=True)[1]
    return 16 * -(-tiles // tn_w) * tn_w < WINO_MAX_COST * 9 * -(-pixels // tn_d) * tn_d


def winograd_filters(wk: np.ndarray) -> np.ndarray:
    """U[16][Cout][Cin] = G g G^T of filters ``wk`` [Cout][Cin][9] (float64 in, float32 out)."""
    cout, cin = wk.shape[:2]
    g = wk.reshape(cout, cin, 3, 3)
    u = np.einsum("ai,ocij,bj->ocab", _G, g, _G)  # [Cout][Cin][4][4]
    return np.ascontiguousarray(u.reshape(cout, cin, 16).transpose(2, 0, 1)).astype(np.float32)


def lower_winograd(node: Node, lw: Lowering, x: Tensor, wk: np.ndarray, key: Any, geo: dict[str, int],
                   out_hw: tuple[int, int], defines: dict[str, Any], extra: list[Any], p0: float, p1: float,
                   y: Tensor, owner: Any = None) -> None:
    """Winograd F(2x2, 3x3): input transform, 16 batched GEMMs, output transform + epilogue.
    ``key``/``owner``: how the transformed filters are shared (``Lowering.const_tensor``)."""
    n_img, cin, h, w = x.shape
    cout = wk.shape[0]
    oh, ow = out_hw
    th, tw = -(-oh // 2), -(-ow // 2)
    npix = n_img * th * tw
    f32 = storage_for(Type.f32)
    assert f32 is not None
    u = lw.const_tensor(winograd_filters(wk).reshape(-1), Type.f32, key=("wino-u", *key), exact=True,
                      owner=owner)
    v = lw.temp([16 * cin * npix], f32)
    m = lw.temp([16 * cout * npix], f32)
    ind: dict[str, Any] = {"WINO_INPUT": 1}
    ind.update(x.storage.macros("X"))
    total_in = n_img * cin * th * tw
    prm = lw.params([total_in, cin, h, w, th, tw, geo["PH"], geo["PW"], npix])
    lw.launch("winograd.cl", "wino_input", ind, [x, v, prm], [total_in], [128], node=node)
    gemm_f32(lw, node, u, v, m, cout, npix, cin, batches=16)
    outd = dict(defines)
    outd["WINO_OUTPUT"] = 1
    for k in [k for k in outd if k.startswith(("X_", "W_", "LOAD_X", "LOAD_W", "STORE_X", "STORE_W"))]:
        del outd[k]
    outd.pop("GEO_RUNTIME", None)
    for k in ("KH", "KW", "SH", "SW", "PH", "PW", "DH", "DW"):
        outd.pop(k, None)
    total_out = n_img * cout * th * tw
    prm = lw.params([total_out, cout, oh, ow, th, tw, npix, float_bits(p0), float_bits(p1)])
    lw.launch("winograd.cl", "wino_output", outd, [m, *extra, y, prm], [total_out], [128], node=node)


def gemm_f32(lw: Lowering, node: Node, a: Tensor, b: Tensor, y: Tensor, m: int, n: int, k: int,
             batches: int) -> None:
    """y[i] = a[i] (m x k, row-major) * b[i] (k x n, row-major) for i < batches, float32 tensors,
    no epilogue: the batched ``matmul`` kernel of gemm.cl."""
    from opforge_gpu.library.nn import GEMM, _tile, _tile_defines

    f32 = storage_for(Type.f32)
    assert f32 is not None
    tile = _tile(lw, m, n, batches)
    d: dict[str, Any] = {"MATMUL": 1, "A_KMAJOR": int(k > 1), "B_NMAJOR": 1, "HAS_BIAS": 0, "HAS_RES": 0, "ACT": 0}
    for name in ("X", "W", "Y", "BI", "R"):
        d.update(f32.macros(name))
    d.update(_tile_defines(tile))
    offs: list[int] = []
    for i in range(batches):
        offs += [i * m * k, i * k * n]
    tm, tn, _, wm, wn = tile
    prm = lw.params([m, n, k, k, 1, n, 1, 0, 0, *offs])
    lsize = (tn // wn, tm // wm, 1)
    gsize = (-(-n // tn) * lsize[0], -(-m // tm) * lsize[1], batches)
    lw.launch(GEMM, "matmul", d, [a, b, lw.dummy(), lw.dummy(), y, prm], gsize, lsize, node=node)


# --- split-K --------------------------------------------------------------------------------
def split_k(lw: Lowering, work_groups: int, k: int, tk: int) -> int:
    """How many slices to split a GEMM convolution's K into (1: no split)."""
    if _FORCED == "gemm":
        return 1
    slices_max = max(1, k // (4 * tk))  # each slice keeps at least 4 steps of the K loop
    if _FORCED == "splitk":
        return min(4, slices_max)
    if lw.dev.info.type == "CPU" or k < 512:
        return 1
    want = 2 * lw.dev.info.compute_units
    if work_groups >= want:
        return 1
    return max(1, min(8, slices_max, -(-want // work_groups)))
