"""The no-VNNI guard: hosts whose int8 kernels add u8 x s8 products in saturating int16 pairs
keep full-range int8 weights in f32."""

from __future__ import annotations

import functools

#: oneDNN ISAs with no VNNI dot product. Their u8 x s8 convolutions and matrix products add the
#: products in pairs with vpmaddubsw, which saturates at int16: 255 * (127 + 127) overflows, so
#: full-range int8 weights (ONNX Runtime's and NNCF's default) give silently wrong sums, up to 23
#: quantization steps off on an inception block. ONNX Runtime's answer is 7-bit weights
#: (reduce_range); a model quantized without it keeps such layers in f32 here.
NO_VNNI = frozenset({"x86-64", "sse41", "avx", "avx2", "avx512_core"})
#: the largest |weight| whose pair sums cannot saturate: 255 * (64 + 64) = 32640 <= 32767
PAIR_SAFE_WEIGHT = 64


@functools.cache
def pairs_saturate() -> bool:
    """Whether this host's int8 kernels sum u8 x s8 pairs in saturating int16 (no VNNI, as
    oneDNN sees the host: ONEDNN_MAX_CPU_ISA caps it)."""
    from opforge_cpu._loader import load_core

    return str(load_core().cpu_isa()) in NO_VNNI
