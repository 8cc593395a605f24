"""Our f32 depthwise convolution kernel (core/dw_conv_f32.cpp, chosen by core/dw_conv_plan.cpp): an
f32 depthwise 2D convolution that oneDNN would run as brdgmm_dw (channels-last) runs it instead
when its kernel is 5x5 or 7x7, or 3x3 with a fused SiLU, ReLU, ReLU6/Clip or nothing (stop 21's
3x3 tile, dw_conv_f32_tile3.inc; a 3x3 HardSwish keeps oneDNN; at AVX2 a 3x3 one only at stride 1),
at stride 1 or 2, any padding, channel count and batch, with its
bias and fused ReLU, ReLU6, SiLU, HardSwish. On an AVX-512 host (oneDNN's ISA not capped below
AVX512_CORE) the 16-lane build runs (exec type ``dw:avx512_f32``); under ONEDNN_MAX_CPU_ISA=AVX2
(an emulated AVX2 host, or a real one) the 8-lane AVX2+FMA build (``dw:avx2_f32``). Outputs are
within f32 rounding of ONNX Runtime, the same bytes at 1 and 2 threads (chunks of whole output
rows); NaN / inf flow as in ONNX Runtime. OPFORGE_CPU_DW_F32=0 or OPFORGE_CPU_DW_KERNEL=0 (read
once a process, so a child process) gives oneDNN's primitive back; OPFORGE_CPU_DW_F32_3X3_RELU=0
gives stop 17's rule and general tile back (the 3x3 tile gives the same bytes as the general one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from test_cpu_dw_kernel import (  # noqa: E402
    F32_CHILD,
    Graph,
    assert_non_finite_like_ort,
    non_finite_case,
    ort_run,
)
from test_cpu_dw_kernel import f32_check as check  # noqa: E402
from test_cpu_dw_kernel import f32_run as run  # noqa: E402


def _flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


# which build this process runs: oneDNN's ISA cap (ONEDNN_MAX_CPU_ISA) and the CPU, the switches on
_CAP = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
_FLAGS = _flags()
_SWITCHED_OFF = "0" in (os.environ.get("OPFORGE_CPU_DW_KERNEL", "1"), os.environ.get("OPFORGE_CPU_DW_F32", "1"))
if _SWITCHED_OFF:
    DW: str | None = None
elif "avx512f" in _FLAGS and (_CAP in {"ALL", "DEFAULT"} or _CAP.startswith("AVX512_CORE")):
    DW = "dw:avx512_f32"
elif {"avx2", "fma"} <= _FLAGS and _CAP not in {"SSE41", "AVX"}:
    DW = "dw:avx2_f32"
else:
    DW = None
HAS_AVX2 = {"avx2", "fma"} <= _FLAGS
# stop 21's 3x3 rule (ReLU / ReLU6 / nothing on our 3x3 tile) on in this process
RELU3 = os.environ.get("OPFORGE_CPU_DW_F32_3X3_RELU", "1") != "0"




def count(types: dict[str, str], name: str | None = None) -> int:
    return sum(t == (name or DW) for t in types.values())


def block(channels: int, hw: tuple[int, int], k: int | tuple[int, int], stride: int, act: str,
          pads: list[int] | None, bias: bool, seed: int) -> Graph:
    g = Graph(seed)
    h = g.act(g.conv("x", 16, channels), "relu6")
    h = g.act(g.conv(h, channels, channels, k, group=channels, stride=stride, pads=pads, bias=bias), act)
    g.out = g.conv(h, channels, 24)  # type: ignore[attr-defined]
    return g


CASES = [
    # channels, (h, w), kernel, stride, batch, activation, explicit pads [t, l, b, r], bias, ours
    (40, (28, 28), 5, 1, 1, "silu", None, True, True),           # EfficientNet's 5x5: 2 blocks of 16 + 8
    (72, (29, 31), 5, 2, 2, "relu", None, False, True),          # 5x5 stride 2, odd sizes, no bias, 2 images
    (96, (28, 28), 7, 1, 1, "none", None, True, True),           # ConvNeXt's 7x7
    (48, (20, 20), 7, 2, 1, "hardswish", None, True, True),      # 7x7 stride 2, MobileNetV3's HardSwish
    (120, (14, 14), 5, 1, 3, "relu6", [1, 2, 3, 2], True, True),  # uneven pads, 3 images, 120 = 7x16 + 8
    (32, (56, 56), 3, 1, 1, "silu", None, True, True),           # 3x3 with SiLU (EfficientNet)
    (24, (30, 30), 3, 2, 2, "silu", [0, 0, 1, 1], True, True),   # TF "SAME" stride 2, 24 = 16 + 8
    (20, (9, 12), 3, 1, 1, "silu", [1, 2, 1, 0], True, True),    # 20 channels: a tail of 4 (and of 4 at AVX2)
    (5, (11, 11), 5, 1, 1, "relu6", None, True, True),           # 5 channels: only a masked block
    (72, (2, 3), 5, 1, 1, "relu6", None, True, True),            # a map smaller than the kernel
    (16, (1, 1), 7, 1, 3, "hardswish", None, True, True),        # a 1x1 map: only the centre tap
    (40, (7, 7), 5, 1, 2, "silu", None, True, True),             # a 7x7 map (every pixel an edge tile)
    # stop 21's 3x3 tile (two output rows a tile) with ReLU / ReLU6 / nothing
    (64, (28, 28), 3, 1, 1, "relu6", None, True, True),          # 3x3 ReLU6 (MobileNetV2)
    (64, (28, 28), 3, 2, 1, "relu", None, True, True),           # 3x3 ReLU stride 2 (MnasNet)
    (24, (13, 17), 3, 1, 2, "relu6", None, True, True),          # odd height and width, 2 images, 16 + 8
    (72, (15, 15), 3, 2, 1, "none", None, False, True),          # stride 2 over an odd map, no bias
    (21, (11, 9), 3, 1, 1, "relu", [0, 0, 0, 0], True, True),    # padding 0, 21 = 16 + 5 (tails at both widths)
    (33, (20, 37), 3, 2, 1, "relu6", [0, 0, 1, 1], True, True),  # TF "SAME" stride 2, 33 = 2 x 16 + 1
    (16, (9, 26), 3, 1, 1, "relu", [2, 1, 0, 2], True, True),    # uneven pads, a padding of 2
    (40, (7, 7), 3, 1, 3, "relu6", None, True, True),            # a 7x7 map (one tile a row), 3 images
    (8, (1, 1), 3, 1, 2, "relu6", None, True, True),             # a 1x1 map: only the centre tap
    (48, (2, 2), 3, 2, 1, "relu6", None, True, True),            # a map smaller than the kernel, stride 2
    (96, (14, 14), 3, 1, 1, "hardswish", None, True, False),     # 3x3 HardSwish: oneDNN (not measured)
]


@pytest.mark.parametrize(("channels", "hw", "k", "stride", "batch", "act", "pads", "bias", "ours"), CASES)
def test_dw_f32_bit_exact_and_close_to_ort(tmp_path: Path, channels: int, hw: tuple[int, int], k: int, stride: int,
                                           batch: int, act: str, pads: list[int] | None, bias: bool,
                                           ours: bool) -> None:
    # 1x1 -> depthwise (activation) -> 1x1, as in an inverted residual block
    g = block(channels, hw, k, stride, act, pads, bias, channels + hw[0] + k)
    path = g.save(tmp_path / "m.onnx", (batch, 16, *hw), [g.out])  # type: ignore[attr-defined]
    x = g.rng.standard_normal((batch, 16, *hw)).astype(np.float32)
    types = check(path, x)
    # (the AVX2 build runs a 3x3 one at column stride 1 only: slower than brdgmm_dw:avx2 at 2;
    # a 3x3 one without SiLU only under stop 21's rule)
    ours = ours and not (DW == "dw:avx2_f32" and k == 3 and stride != 1)
    ours = ours and not (k == 3 and act != "silu" and not RELU3)
    assert count(types) == (1 if ours and DW else 0), types
    assert count(types, "dw:avx512_bf16") == 0, types


def test_dw_f32_outputs_and_non_square(tmp_path: Path) -> None:
    # the depthwise outputs are model outputs too; a non-square 3x5 kernel with SiLU, a 5x3 with ReLU
    g = Graph(21)
    h = g.node("Relu", [g.conv("x", 16, 40)])
    y = g.act(g.conv(h, 40, 40, (3, 5), group=40), "silu")
    z = g.act(g.conv(h, 40, 40, (5, 3), group=40, stride=2), "relu")
    path = g.save(tmp_path / "m.onnx", (2, 16, 24, 24), [g.conv(y, 40, 16), y, z])
    x = g.rng.standard_normal((2, 16, 24, 24)).astype(np.float32)
    types = check(path, x)
    assert count(types) == (1 if DW else 0), types  # (the 5x3 has 3 columns and ReLU: oneDNN)


def test_dw_f32_refuses_what_it_does_not_run(tmp_path: Path) -> None:
    # dilation 2, a 9x9 kernel, stride 3, a residual summed into the depthwise output: oneDNN's
    # primitive; still bit-exact at 1 vs 2 threads and close to ONNX Runtime
    g = Graph(5)
    h = g.node("Relu", [g.conv("x", 16, 48)])
    a = g.conv(h, 48, 48, 5, group=48, dilation=2)
    b = g.conv(h, 48, 48, 9, group=48)
    c = g.conv(h, 48, 48, 5, group=48, stride=3)
    d = g.node("Add", [g.conv(h, 48, 48, 5, group=48), h])
    path = g.save(tmp_path / "m.onnx", (1, 16, 27, 27), [g.conv(a, 48, 8), g.conv(b, 48, 8), g.conv(c, 48, 8),
                                                          g.conv(d, 48, 8)])
    x = g.rng.standard_normal((1, 16, 27, 27)).astype(np.float32)
    types = check(path, x)
    assert count(types) == 0, types


@pytest.mark.xfail(DW is None, reason="oneDNN's brdgmm_dw with fused post-ops does not give NaN where ONNX Runtime "
                   "does (the known gap); our kernel does")
def test_dw_f32_nan_and_inf_like_ort(tmp_path: Path) -> None:
    # NaN and +-inf in the source of 5x5 depthwise convolutions with ReLU / SiLU: NaN and inf
    # exactly where ONNX Runtime has them
    path, x = non_finite_case(tmp_path, 5, "relu")
    got, types = run(path, x, 2)
    assert count(types) == (2 if DW else 0), types
    assert_non_finite_like_ort(got, path, x, 2e-5)


_CHILD = F32_CHILD  # the f32 output at 2 threads and the exec types, in a child process


def _child(tmp_path: Path, env: dict[str, str], k: int = 5, stride: int = 1,
           act: str = "silu") -> tuple[np.ndarray, np.ndarray, str]:
    # EfficientNet's 5x5 with SiLU by default, 40 channels (a tail at both lane counts)
    g = block(40, (28, 28), k, stride, act, None, True, 31)
    path = g.save(tmp_path / "m.onnx", (2, 16, 28, 28), [g.out])  # type: ignore[attr-defined]
    x = g.rng.standard_normal((2, 16, 28, 28)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    res = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tmp_path / "x.npy"),
                          str(Path(__file__).parent)], env=dict(os.environ, **env), capture_output=True, text=True,
                         timeout=120, check=True)
    return np.load(str(tmp_path / "x.npy") + ".out.npy"), ort_run(path, x)[0], res.stdout


@pytest.mark.skipif(not HAS_AVX2, reason="this host has no AVX2+FMA")
def test_dw_f32_avx2_build(tmp_path: Path) -> None:
    # ONEDNN_MAX_CPU_ISA=AVX2 in a child process (an emulated AVX2 host): the 8-lane build,
    # within f32 rounding of ONNX Runtime
    got, want, types = _child(tmp_path, {"ONEDNN_MAX_CPU_ISA": "AVX2", "OPFORGE_CPU_DW_F32": "1",
                                         "OPFORGE_CPU_DW_KERNEL": "1"})
    assert "dw:avx2_f32" in types and "avx512" not in types, types
    assert np.abs(got - want).max() / np.abs(want).max() < 2e-5


@pytest.mark.skipif(not HAS_AVX2, reason="this host has no AVX2+FMA")
@pytest.mark.parametrize(("stride", "act", "ours"), [(1, "relu6", True), (1, "none", True), (2, "relu", False)])
def test_dw_f32_3x3_avx2_build(tmp_path: Path, stride: int, act: str, ours: bool) -> None:
    # the 3x3 tile's AVX2 build under ONEDNN_MAX_CPU_ISA=AVX2 (child process): stride 1 on ours,
    # stride 2 keeps brdgmm_dw:avx2 (ours was slower there); within f32 rounding of ONNX Runtime
    got, want, types = _child(tmp_path, {"ONEDNN_MAX_CPU_ISA": "AVX2", "OPFORGE_CPU_DW_F32": "1",
                                         "OPFORGE_CPU_DW_KERNEL": "1", "OPFORGE_CPU_DW_F32_3X3_RELU": "1"},
                              3, stride, act)
    assert ("dw:avx2_f32" in types) == ours and "avx512" not in types, types
    assert np.abs(got - want).max() / np.abs(want).max() < 2e-5


@pytest.mark.skipif(DW is None, reason="our f32 dw kernel does not run in this process")
@pytest.mark.parametrize("stride", [1, 2])
def test_dw_f32_3x3_tile_same_bytes_as_general_tile(tmp_path: Path, stride: int) -> None:
    # a 3x3 SiLU one runs ours with the switch on (the 3x3 tile) and off (the general tile): the
    # same bytes, since both sum each output in the same order
    if DW == "dw:avx2_f32" and stride != 1:
        pytest.skip("the AVX2 build runs a 3x3 one at stride 1 only")
    on, want, types_on = _child(tmp_path, {"OPFORGE_CPU_DW_F32_3X3_RELU": "1"}, 3, stride, "silu")
    off, _, types_off = _child(tmp_path, {"OPFORGE_CPU_DW_F32_3X3_RELU": "0"}, 3, stride, "silu")
    assert "'dw:" in types_on and "'dw:" in types_off, (types_on, types_off)
    np.testing.assert_array_equal(on, off)
    assert np.abs(on - want).max() / np.abs(want).max() < 2e-5


@pytest.mark.skipif(DW is None, reason="our f32 dw kernel does not run in this process")
def test_dw_f32_3x3_relu_switch_off(tmp_path: Path) -> None:
    # OPFORGE_CPU_DW_F32_3X3_RELU=0 in a child process: a 3x3 ReLU6 one keeps brdgmm_dw (stop 17's
    # rule); on, ours; the same outputs within f32 rounding
    off, want, types_off = _child(tmp_path, {"OPFORGE_CPU_DW_F32_3X3_RELU": "0"}, 3, 1, "relu6")
    on, _, types_on = _child(tmp_path, {"OPFORGE_CPU_DW_F32_3X3_RELU": "1"}, 3, 1, "relu6")
    assert "'dw:" not in types_off and "brdgmm_dw" in types_off, types_off
    assert "'dw:" in types_on, types_on
    for got in (on, off):
        assert np.abs(got - want).max() / np.abs(want).max() < 2e-5


@pytest.mark.skipif(DW is None, reason="our f32 dw kernel does not run in this process")
@pytest.mark.parametrize("switch", ["OPFORGE_CPU_DW_F32", "OPFORGE_CPU_DW_KERNEL"])
def test_dw_f32_switch_off(tmp_path: Path, switch: str) -> None:
    # the switch at 0 in a child process: oneDNN's brdgmm_dw, the same outputs within f32 rounding
    got, want, types = _child(tmp_path, {switch: "0"})
    assert "'dw:" not in types and "brdgmm_dw" in types, types
    assert np.abs(got - want).max() / np.abs(want).max() < 2e-5
