"""The no-VNNI guard: hosts whose int8 kernels add u8 x s8 products in saturating int16 pairs
get weights that cannot saturate: full-range int8 channels are rounded to 7 bits (or, with
OPFORGE_CPU_INT8_7BIT=0, such layers stay in f32)."""

from __future__ import annotations

import functools
import os

import numpy as np

#: oneDNN ISAs with no VNNI dot product. Their u8 x s8 convolutions and matrix products add the
#: products in pairs with vpmaddubsw, which saturates at int16: 255 * (127 + 127) overflows, so
#: full-range int8 weights (ONNX Runtime's and NNCF's default) give silently wrong sums, up to 23
#: quantization steps off on an inception block. ONNX Runtime's answer is 7-bit weights
#: (reduce_range); a model quantized without it keeps such layers in f32 here.
NO_VNNI = frozenset({"x86-64", "sse41", "avx", "avx2", "avx512_core"})
#: the largest |weight| whose pair sums cannot saturate: 255 * (64 + 64) = 32640 <= 32767
PAIR_SAFE_WEIGHT = 64
#: read once: "0" keeps full-range layers in f32 on such hosts (exact, about 2x slower) instead
#: of rounding their weights to 7 bits
SEVEN_BIT = os.environ.get("OPFORGE_CPU_INT8_7BIT", "1") != "0"
#: read once: "0" treats depthwise convolutions like the others (rounded to 7 bits or f32);
#: by default they keep full-range weights, as oneDNN's depthwise int8 kernels have no pairs
DW_EXACT = os.environ.get("OPFORGE_CPU_INT8_DW_FULL", "1") != "0"


@functools.cache
def pairs_saturate() -> bool:
    """Whether this host's int8 kernels sum u8 x s8 pairs in saturating int16 (no VNNI, as
    oneDNN sees the host: ONEDNN_MAX_CPU_ISA caps it)."""
    from opforge_cpu._loader import load_core

    return str(load_core().cpu_isa()) in NO_VNNI


def seven_bit(q_w: np.ndarray, w_scale: np.ndarray, axes: int) -> tuple[np.ndarray, np.ndarray]:
    """``q_w`` with every output channel whose largest |weight| exceeds PAIR_SAFE_WEIGHT rounded
    to 7 bits, q -> rint(q / 2) with its scale doubled, as ONNX Runtime's reduce_range and oneDNN's
    avx2 "scale adjust" do: such a layer then runs in int8 without saturating, each weight within
    one original step of its value (half to even, so no bias), and channels already within +-64
    keep their exact weights. The output channels are the first ``axes`` axes of ``q_w`` flattened
    (a GroupConvolution's [G, C/G, ...]: 2) or, with ``axes`` = -1, axis 1 (a MatMul's [K, N], a
    ConvolutionBackpropData's [C_in, C_out, ...])."""
    moved = np.moveaxis(q_w, 1, 0) if axes == -1 else q_w
    lead = 1 if axes == -1 else axes
    rows = moved.reshape(int(np.prod(moved.shape[:lead])), -1).astype(np.int16)
    big = np.abs(rows).max(axis=1, initial=0) > PAIR_SAFE_WEIGHT
    halved = np.where(big[:, None], _halve_balanced(rows), rows).astype(np.int8).reshape(moved.shape)
    out = np.moveaxis(halved, 0, 1) if axes == -1 else halved
    scale = np.where(big, np.asarray(w_scale, np.float32) * 2, np.asarray(w_scale, np.float32)).astype(np.float32)
    return np.ascontiguousarray(out), scale


def _halve_balanced(rows: np.ndarray) -> np.ndarray:
    """rows / 2 rounded, the odd values (exactly half way) alternately down and up along each row,
    so a row's rounding errors sum to 0 or -1/2: the error of a channel's sum over a constant input
    (post-ReLU u8 activations are far from zero-mean) cancels instead of growing like sqrt(K)."""
    odd = (rows & 1).astype(bool)
    nth = np.cumsum(odd, axis=1)  # 1, 2, ... over the odd values of each row
    return (rows >> 1) + (odd & (nth % 2 == 0))
