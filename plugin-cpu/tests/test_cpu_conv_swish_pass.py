"""The Swish pass after an f32 1x1 convolution (core/swish_pass.cpp, nn.cpp make_dnnl_conv): on a
host with AVX-512 (oneDNN's ISA not capped below AVX512_CORE), an f32 1x1 convolution whose
fused activations end in a Swish (SiLU written x * Sigmoid(x)) runs oneDNN's primitive without
that post-op and our in-place pass after it (exec type ``...+swish:avx512``). Its outputs are
within f32 rounding of ONNX Runtime, the same bytes at 1 and 2 threads; NaN / inf come out where
ONNX Runtime has them. Other convolutions (3x3, grouped, ReLU, bf16) keep the post-op.
OPFORGE_CPU_CONV_SWISH_PASS=0 (read once a process, so a child process) gives the post-op back."""

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
    ort_run,
)
from test_cpu_dw_kernel import f32_check as check  # noqa: E402
from test_cpu_dw_kernel import f32_run as run  # noqa: E402


def _cpuinfo() -> tuple[set[str], str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set(), ""
    flags: set[str] = set()
    vendor = ""
    for line in text.splitlines():
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
        if line.startswith("vendor_id") and not vendor:
            vendor = line.split(":", 1)[1].strip()
    return flags, vendor


_FLAGS, _VENDOR = _cpuinfo()
_CAP = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
# which build of the pass runs in this process (the rule of conv_swish_pass_on_this_host): the
# switch on, AVX-512 unless oneDNN's ISA is capped below AVX512_CORE (any vendor), else AVX2+FMA on
# an AMD CPU
_AMD = _VENDOR == "AuthenticAMD"
_AVX512 = "avx512f" in _FLAGS and (_CAP in {"ALL", "DEFAULT"} or _CAP.startswith("AVX512_CORE"))
_AVX2 = {"avx2", "fma"} <= _FLAGS and _CAP not in {"SSE41", "AVX"}
PASS = os.environ.get("OPFORGE_CPU_CONV_SWISH_PASS", "1") != "0" and (_AVX512 or (_AMD and _AVX2))
MARK = "+swish:avx512" if _AVX512 else "+swish:avx2"




def marked(types: dict[str, str]) -> int:
    return sum(MARK in t for t in types.values())


CASES = [
    # input channels, output channels, (h, w), batch, a residual Add before the SiLU
    (16, 96, (56, 56), 1, False),   # EfficientNet's first expand convolution (scaled down)
    (24, 20, (13, 17), 2, False),   # 20 channels (16 + 4), odd sizes, 2 images
    (40, 5, (7, 7), 1, False),      # 5 channels: fewer than a vector a pixel
    (32, 32, (9, 11), 3, True),     # the residual summed before the SiLU (sum post-op, then the pass)
    (8, 1152, (1, 1), 1, False),    # one pixel (the SE block's size)
]


@pytest.mark.parametrize(("cin", "cout", "hw", "batch", "residual"), CASES)
def test_swish_pass_bytes_and_close_to_ort(tmp_path: Path, cin: int, cout: int, hw: tuple[int, int], batch: int,
                                           residual: bool) -> None:
    # 3x3 stem -> 1x1 with SiLU (the one the pass takes) -> 1x1 out, channels-last between them
    g = Graph(cin + cout + hw[0])
    h = g.act(g.conv("x", 3, cin, 3), "relu")
    y = g.conv(h, cin, cout)
    if residual:
        y = g.node("Add", [y, h])
    y = g.act(y, "silu")
    path = g.save(tmp_path / "m.onnx", (batch, 3, *hw), [g.conv(y, cout, 8)])
    x = g.rng.standard_normal((batch, 3, *hw)).astype(np.float32)
    types = check(path, x)
    assert marked(types) == (1 if PASS else 0), types


def test_swish_pass_as_model_output(tmp_path: Path) -> None:
    # the convolution's output is the model's output (written into the returned array, plain
    # layout): the pass runs over it there
    g = Graph(3)
    y = g.act(g.conv("x", 24, 40), "silu")
    path = g.save(tmp_path / "m.onnx", (2, 24, 10, 12), [y])
    x = g.rng.standard_normal((2, 24, 10, 12)).astype(np.float32)
    types = check(path, x)
    assert marked(types) == (1 if PASS else 0), types


def test_swish_pass_leaves_the_others(tmp_path: Path) -> None:
    # a 3x3 convolution with SiLU, a grouped 1x1 with SiLU, a 1x1 with ReLU: the post-ops stay
    g = Graph(4)
    h = g.act(g.conv("x", 16, 32), "relu")
    a = g.act(g.conv(h, 32, 32, 3), "silu")
    b = g.act(g.conv(h, 32, 32, 1, group=2), "silu")
    c = g.act(g.conv(h, 32, 32), "relu")
    path = g.save(tmp_path / "m.onnx", (1, 16, 14, 14), [g.conv(a, 32, 8), g.conv(b, 32, 8), g.conv(c, 32, 8)])
    x = g.rng.standard_normal((1, 16, 14, 14)).astype(np.float32)
    types = check(path, x)
    assert marked(types) == 0, types


def test_swish_pass_not_in_bf16(tmp_path: Path) -> None:
    # under the bf16 hint the convolution keeps its post-op (the pass is f32 only)
    g = Graph(6)
    y = g.act(g.conv(g.act(g.conv("x", 8, 32, 3), "relu"), 32, 64), "silu")
    path = g.save(tmp_path / "m.onnx", (1, 8, 16, 16), [g.conv(y, 64, 8)])
    x = g.rng.standard_normal((1, 8, 16, 16)).astype(np.float32)
    got, types = run(path, x, 2, "bf16")
    assert marked(types) == 0, types
    want = ort_run(path, x)[0]
    assert np.abs(got[0] - want).max() / np.abs(want).max() < 3e-2


def test_swish_pass_nan_and_inf_like_ort(tmp_path: Path) -> None:
    # NaN, +inf and -inf in the source of a 1x1 convolution with SiLU: every output channel of such
    # a pixel is NaN or +-inf (by the sign of its weight); SiLU of -inf is NaN (-inf * 0), of
    # +inf inf, exactly where ONNX Runtime has them
    g = Graph(8)
    y = g.act(g.conv("x", 16, 48), "silu")
    path = g.save(tmp_path / "m.onnx", (1, 16, 8, 8), [y])
    x = g.rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    x[0, 3, 2, 2] = np.nan
    x[0, 7, 5, 1] = np.inf
    x[0, 9, 0, 7] = -np.inf
    got, types = run(path, x, 2)
    assert marked(types) == (1 if PASS else 0), types
    assert_non_finite_like_ort(got, path, x, 2e-5)


_CHILD = F32_CHILD  # the f32 output at 2 threads and the exec types, in a child process


def _children(tmp_path: Path, envs: dict[str, dict[str, str]]) -> tuple[dict[str, np.ndarray], dict[str, str],
                                                                         np.ndarray]:
    """A 1x1 convolution with SiLU (16 -> 96, 28x28 after a 3x3 one) run in one child process per
    environment of ``envs``: their outputs and exec types by name, and ONNX Runtime's output."""
    g = Graph(12)
    y = g.act(g.conv(g.act(g.conv("x", 3, 16, 3), "relu"), 16, 96), "silu")
    path = g.save(tmp_path / "m.onnx", (1, 3, 28, 28), [g.conv(y, 96, 24)])
    x = g.rng.standard_normal((1, 3, 28, 28)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    outs, types = {}, {}
    for name, env in envs.items():
        res = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tmp_path / "x.npy"),
                              str(Path(__file__).parent)],
                             env=dict(os.environ, **env), capture_output=True, text=True, timeout=120, check=True)
        outs[name], types[name] = np.load(str(tmp_path / "x.npy") + ".out.npy"), res.stdout
    return outs, types, ort_run(path, x)[0]


@pytest.mark.skipif(not PASS, reason="the Swish pass does not run in this process")
def test_swish_pass_switch_off(tmp_path: Path) -> None:
    # OPFORGE_CPU_CONV_SWISH_PASS=0 in a child process: oneDNN's post-op, no mark; both outputs
    # within f32 rounding of ONNX Runtime and of each other
    outs, types, want = _children(tmp_path, {"off": {"OPFORGE_CPU_CONV_SWISH_PASS": "0"},
                                             "on": {"OPFORGE_CPU_CONV_SWISH_PASS": "1"}})
    assert "+swish" not in types["off"] and MARK in types["on"], types
    scale = float(np.abs(want).max())
    for got in outs.values():
        assert np.abs(got - want).max() / scale < 2e-5
    assert np.abs(outs["off"] - outs["on"]).max() / scale < 2e-5


@pytest.mark.skipif(not (_AMD and {"avx2", "fma"} <= _FLAGS), reason="the AVX2 build runs on AMD hosts with AVX2")
def test_swish_pass_avx2_build(tmp_path: Path) -> None:
    # ONEDNN_MAX_CPU_ISA=AVX2 in a child process (an emulated AVX2 host): the 8-lane build after
    # brgconv_1x1:avx2, within f32 rounding of ONNX Runtime and of oneDNN's post-op (switch off)
    outs, types, want = _children(tmp_path, {
        "on": {"ONEDNN_MAX_CPU_ISA": "AVX2", "OPFORGE_CPU_CONV_SWISH_PASS": "1"},
        "off": {"ONEDNN_MAX_CPU_ISA": "AVX2", "OPFORGE_CPU_CONV_SWISH_PASS": "0"}})
    assert "+swish:avx2" in types["on"] and "avx512" not in types["on"], types
    assert "+swish" not in types["off"], types
    scale = float(np.abs(want).max())
    for got in outs.values():
        assert np.abs(got - want).max() / scale < 2e-5
    assert np.abs(outs["off"] - outs["on"]).max() / scale < 2e-5
