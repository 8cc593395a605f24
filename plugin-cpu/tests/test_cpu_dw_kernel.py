"""Our bf16 depthwise convolution kernel (core/dw_conv_bf16.cpp, chosen by core/dw_conv_plan.cpp):
on an AVX512_BF16 host a bf16 depthwise 2D convolution of a 3x3, 5x5 or 7x7 kernel at stride 1 or
2 (any padding, any channel count, any batch) runs it instead of oneDNN's brdgmm_dw, over the same
channels-last bf16 source and destination (bf16 or f32), with its bias and fused ReLU, ReLU6,
SiLU, HardSwish; exec type ``dw:avx512_bf16``. Dilation, a residual sum and other fused ops keep
oneDNN. Its outputs are within bf16 rounding of ONNX Runtime f32, the same bytes at 1 and 2
threads (chunks of whole output rows), and NaN / inf flow as in ONNX Runtime.
OPFORGE_CPU_DW_KERNEL=0 (read once a process, so a child process) gives oneDNN's primitive back.
Where oneDNN's ISA has no AMX, 3x3 ones without a fused SiLU keep oneDNN's (the host rule, stop 18;
OPFORGE_CPU_DW_BF16_HOST_RULE=0 turns it off)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from cpu_testing import ONEDNN_HAS_AMX, infer_twice  # noqa: E402
from cpu_testing import bf16_run as run  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")


def _host_avx512_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " avx512_bf16" in flags


# whether this process runs our kernel: an AVX512_BF16 host whose oneDNN ISA is not capped below
# AVX512_CORE_BF16 (ONEDNN_MAX_CPU_ISA=AVX2 emulates an AVX2 host), the switch not off
_CAP = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
_BF16_CAPS = {"ALL", "DEFAULT", "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX512_CORE_AMX", "AVX512_CORE_AMX_FP16"}
OURS = _host_avx512_bf16() and _CAP in _BF16_CAPS and os.environ.get("OPFORGE_CPU_DW_KERNEL", "1") != "0"
DW = "dw:avx512_bf16"
# the host rule (dw_conv_plan.cpp, stop 18): where oneDNN's ISA has no AMX, a 3x3 (or narrower)
# kernel without a fused SiLU runs oneDNN's brdgmm_dw; OPFORGE_CPU_DW_BF16_HOST_RULE=0 turns it off
_AMX = ONEDNN_HAS_AMX
HOST_RULE = os.environ.get("OPFORGE_CPU_DW_BF16_HOST_RULE", "1") != "0"


def ours_for(k: int, act: str) -> bool:
    """Whether our kernel runs a bf16 depthwise convolution of kernel width ``k`` with ``act`` here."""
    return OURS and (not HOST_RULE or _AMX or k >= 5 or act == "silu")


class Graph(OnnxGraph):
    def conv(self, x: str, cin: int, cout: int, k: int | tuple[int, int] = 1, group: int = 1, stride: int = 1,
             dilation: int = 1, pads: list[int] | None = None, bias: bool = True) -> str:
        kh, kw = (k, k) if isinstance(k, int) else k
        w = self.rng.standard_normal((cout, cin // group, kh, kw)) * (2.0 / (cin // group * kh * kw)) ** 0.5
        p = pads if pads is not None else [(kh // 2) * dilation, (kw // 2) * dilation] * 2
        ins = [x, self.const(w)] + ([self.const(self.rng.standard_normal(cout) * 0.1)] if bias else [])
        return self.node("Conv", ins, group=group, pads=p, strides=[stride, stride], dilations=[dilation, dilation],
                         kernel_shape=[kh, kw])

    def act(self, x: str, kind: str) -> str:
        if kind == "relu6":
            return self.node("Clip", [x, self.const(0.0), self.const(6.0)])
        if kind == "relu":
            return self.node("Relu", [x])
        if kind == "silu":
            return self.node("Mul", [x, self.node("Sigmoid", [x])])
        if kind == "hardswish":
            return self.node("HardSwish", [x])
        return x


def ort_run(path: Path, x: np.ndarray) -> list[np.ndarray]:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})


def check(path: Path, x: np.ndarray) -> tuple[list[np.ndarray], dict[str, str]]:
    """The same bytes at 1 and 2 threads, within bf16 rounding of ONNX Runtime f32; the 2-thread
    outputs and exec types."""
    one, _ = run(path, x, 1)
    two, types = run(path, x, 2)
    for a, b, w in zip(one, two, ort_run(path, x), strict=True):
        np.testing.assert_array_equal(b, a)
        scale = float(np.abs(w).max())
        assert np.abs(a - w).max() / scale < 3e-2, np.abs(a - w).max() / scale
    return two, types


def f32_run(path: Path, x: np.ndarray, threads: int, precision: str = "f32") -> tuple[list[np.ndarray], dict[str, str]]:
    """The outputs of two inferences' second and the exec type of each node (test_cpu_dw_f32.py,
    test_cpu_conv_swish_pass.py)."""
    got, rows = infer_twice(path, {"x": x}, threads, precision)
    return got, {r.node_name: r.exec_type for r in rows}


#: a child process (argv: model, input .npy, this folder): the f32 output at 2 threads, saved as
#: <input>.out.npy, and the sorted exec types printed (the switch-off / ISA-cap cases of
#: test_cpu_dw_f32.py and test_cpu_conv_swish_pass.py, whose environment is read once a process)
F32_CHILD = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_dw_kernel import f32_run; "
             "from pathlib import Path; g, t = f32_run(Path(sys.argv[1]), np.load(sys.argv[2]), 2); "
             "np.save(sys.argv[2] + '.out.npy', g[0]); print(repr(sorted(t.values())))")


def f32_check(path: Path, x: np.ndarray) -> dict[str, str]:
    """The same bytes at 1 and 2 threads, within f32 rounding of ONNX Runtime; the exec types."""
    one, _ = f32_run(path, x, 1)
    two, types = f32_run(path, x, 2)
    for a, b, w in zip(one, two, ort_run(path, x), strict=True):
        np.testing.assert_array_equal(b, a)
        assert np.abs(a - w).max() / float(np.abs(w).max()) < 2e-5, np.abs(a - w).max() / float(np.abs(w).max())
    return types


def dw_count(types: dict[str, str]) -> int:
    return sum(t == DW for t in types.values())


CASES = [
    # channels, (h, w), kernel, stride, batch, activation, explicit pads [t, l, b, r], bias
    (32, (56, 56), 3, 1, 1, "relu6", None, True),           # MobileNetV2
    (96, (56, 56), 3, 2, 1, "relu6", None, True),           # stride 2
    (24, (30, 30), 3, 1, 2, "relu6", None, True),           # 24 channels (a 16-block and a tail of 8), 2 images
    (40, (28, 28), 5, 1, 3, "silu", None, True),            # EfficientNet's 5x5, 3 images, tail of 8
    (72, (29, 31), 5, 2, 1, "silu", None, False),           # 5x5 stride 2, odd sizes, no bias
    (96, (28, 28), 7, 1, 1, "none", None, True),            # ConvNeXt's 7x7
    (48, (20, 20), 7, 2, 1, "hardswish", None, True),       # 7x7 stride 2, MobileNetV3's HardSwish
    (48, (40, 40), 3, 2, 1, "relu", [0, 0, 1, 1], True),    # TF "SAME" stride 2: padding bottom/right only
    (24, (45, 45), 3, 1, 1, "none", [2, 1, 0, 1], True),    # uneven top/bottom and left/right
    (40, (7, 7), 3, 1, 2, "relu6", None, True),             # a 7x7 map (every pixel an edge tile)
    (72, (2, 3), 5, 1, 1, "relu6", None, True),             # a map smaller than the kernel
    (16, (1, 1), 3, 1, 3, "relu6", None, True),             # a 1x1 map: only the centre tap
    (8, (9, 12), 3, 2, 1, "silu", [1, 2, 1, 0], True),      # 8 channels: one masked block
]


@needs_bf16
@pytest.mark.parametrize(("channels", "hw", "k", "stride", "batch", "act", "pads", "bias"), CASES)
def test_dw_kernel_bit_exact_and_close_to_ort(tmp_path: Path, channels: int, hw: tuple[int, int], k: int,
                                              stride: int, batch: int, act: str, pads: list[int] | None,
                                              bias: bool) -> None:
    # 1x1 -> depthwise (activation) -> 1x1, as in an inverted residual block: bf16 in and out of
    # the depthwise convolution
    g = Graph(channels + hw[0] + k)
    h = g.act(g.conv("x", 16, channels), "relu6")
    h = g.act(g.conv(h, channels, channels, k, group=channels, stride=stride, pads=pads, bias=bias), act)
    out = g.conv(h, channels, 24)
    path = g.save(tmp_path / "m.onnx", (batch, 16, *hw), [out])
    x = g.rng.standard_normal((batch, 16, *hw)).astype(np.float32)
    _, types = check(path, x)
    assert dw_count(types) == (1 if ours_for(k, act) else 0), types


@needs_bf16
def test_dw_kernel_f32_destination(tmp_path: Path) -> None:
    # the depthwise output is also a model output: an f32 destination (nothing but bf16
    # convolutions may read a bf16 one); a non-square 3x5 kernel too
    g = Graph(21)
    h = g.node("Relu", [g.conv("x", 16, 40)])
    y = g.act(g.conv(h, 40, 40, (3, 5), group=40), "relu6")
    z = g.act(g.conv(h, 40, 40, 5, group=40, stride=2), "silu")
    path = g.save(tmp_path / "m.onnx", (2, 16, 24, 24), [g.conv(y, 40, 16), y, z])
    x = g.rng.standard_normal((2, 16, 24, 24)).astype(np.float32)
    _, types = check(path, x)
    assert dw_count(types) == (2 if OURS else 0), types


@needs_bf16
def test_dw_kernel_refuses_what_it_does_not_run(tmp_path: Path) -> None:
    # dilation 2, a 9x9 kernel, stride 3, a residual summed into the depthwise output: oneDNN's
    # primitive; still bit-exact at 1 vs 2 threads and close to ONNX Runtime
    g = Graph(5)
    h = g.node("Relu", [g.conv("x", 16, 48)])
    a = g.conv(h, 48, 48, 3, group=48, dilation=2)
    b = g.conv(h, 48, 48, 9, group=48)
    c = g.conv(h, 48, 48, 3, group=48, stride=3)
    d = g.node("Add", [g.conv(h, 48, 48, 3, group=48), h])
    path = g.save(tmp_path / "m.onnx", (1, 16, 27, 27), [g.conv(a, 48, 8), g.conv(b, 48, 8), g.conv(c, 48, 8),
                                                          g.conv(d, 48, 8)])
    x = g.rng.standard_normal((1, 16, 27, 27)).astype(np.float32)
    _, types = check(path, x)
    assert dw_count(types) == 0, types


@needs_bf16
@pytest.mark.xfail(not ours_for(3, "relu6"),
                   reason="oneDNN's fused Clip post-op drops NaN (the known gap); our kernel keeps it")
def test_dw_kernel_nan_and_inf_like_ort(tmp_path: Path) -> None:
    # NaN and +-inf in the source of a depthwise convolution with ReLU6 / SiLU: the outputs whose
    # windows hold them are NaN or inf exactly where ONNX Runtime's are (no fused op swallows NaN)
    path, x = non_finite_case(tmp_path, 3, "relu6")
    got, types = run(path, x, 2)
    assert dw_count(types) == ours_for(3, "relu6") + ours_for(5, "silu"), types
    assert_non_finite_like_ort(got, path, x, 3e-2)


def non_finite_case(tmp_path: Path, k: int, act: str) -> tuple[Path, np.ndarray]:
    """Two depthwise convolutions of one source (k x k with ``act``; 5x5 stride 2 with SiLU) and a
    source holding NaN, +inf and -inf (also used by test_cpu_dw_f32.py)."""
    g = Graph(9)
    y = g.act(g.conv("x", 32, 32, k, group=32), act)
    z = g.act(g.conv("x", 32, 32, 5, group=32, stride=2), "silu")
    path = g.save(tmp_path / "m.onnx", (1, 32, 16, 16), [y, z])
    x = g.rng.standard_normal((1, 32, 16, 16)).astype(np.float32)
    x[0, 3, 5, 5] = np.nan
    x[0, 17, 0, 0] = np.inf
    x[0, 20, 15, 9] = -np.inf
    x[0, 31, 8, 0] = np.nan
    return path, x


def assert_non_finite_like_ort(got: list[np.ndarray], path: Path, x: np.ndarray, tol: float) -> None:
    """NaN and +-inf exactly where ONNX Runtime has them, the finite values within ``tol`` (relative
    to the largest)."""
    for a, w in zip(got, ort_run(path, x), strict=True):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(w))
        np.testing.assert_array_equal(np.isposinf(a), np.isposinf(w))
        np.testing.assert_array_equal(np.isneginf(a), np.isneginf(w))
        fin = np.isfinite(w)
        assert np.abs(a[fin] - w[fin]).max() / np.abs(w[fin]).max() < tol


@needs_bf16
@pytest.mark.skipif(not OURS, reason="our dw kernel does not run in this process")
def test_dw_kernel_switch_off(tmp_path: Path) -> None:
    # OPFORGE_CPU_DW_KERNEL=0 in a child process: oneDNN's brdgmm_dw, the same outputs within
    # bf16 rounding (its bias is rounded to bf16, ours is not; the sums' order differs)
    # (5x5: our kernel on every host, the host rule aside)
    g = Graph(13)
    h = g.act(g.conv("x", 16, 64), "relu6")
    out = g.conv(g.act(g.conv(h, 64, 64, 5, group=64), "relu6"), 64, 24)
    path = g.save(tmp_path / "m.onnx", (1, 16, 28, 28), [out])
    x = g.rng.standard_normal((1, 16, 28, 28)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    got, types = run(path, x, 2)
    assert dw_count(types) == 1, types
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from cpu_testing import bf16_run; "
            "from pathlib import Path; g, t = bf16_run(Path(sys.argv[1]), np.load(sys.argv[2]), 2); "
            "np.save(sys.argv[2] + '.out.npy', g[0]); print(repr(sorted(t.values())))")
    env = dict(os.environ, OPFORGE_CPU_DW_KERNEL="0")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(Path(__file__).parent)],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    assert DW not in res.stdout and "brdgmm_dw" in res.stdout, res.stdout
    off = np.load(str(tmp_path / "x.npy") + ".out.npy")
    assert np.abs(off - got[0]).max() / np.abs(off).max() < 2e-2


@needs_bf16
@pytest.mark.skipif(not OURS, reason="our dw kernel does not run in this process")
def test_dw_kernel_host_rule_and_its_switch(tmp_path: Path) -> None:
    # 3x3 with ReLU6, 3x3 with SiLU, 5x5 with ReLU6 from one source: where oneDNN's ISA has no AMX
    # the first runs brdgmm_dw, the others ours (on an AMX host all three ours);
    # OPFORGE_CPU_DW_BF16_HOST_RULE=0 in a child process: all three ours, the outputs within bf16
    # rounding of the rule's (brdgmm_dw rounds its bias to bf16, ours does not)
    g = Graph(23)
    h = g.act(g.conv("x", 16, 48), "relu6")
    outs = [g.conv(g.act(g.conv(h, 48, 48, k, group=48), act), 48, 8) for k, act in ((3, "relu6"), (3, "silu"),
                                                                                     (5, "relu6"))]
    path = g.save(tmp_path / "m.onnx", (1, 16, 28, 28), outs)
    x = g.rng.standard_normal((1, 16, 28, 28)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    got, types = check(path, x)
    assert dw_count(types) == ours_for(3, "relu6") + 2, types
    if not ours_for(3, "relu6"):
        assert any(t.startswith("brdgmm_dw") for t in types.values()), types
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from cpu_testing import bf16_run; "
            "from pathlib import Path; g, t = bf16_run(Path(sys.argv[1]), np.load(sys.argv[2]), 2); "
            "np.savez(sys.argv[2] + '.out.npz', *g); print(sum(v == 'dw:avx512_bf16' for v in t.values()))")
    env = dict(os.environ, OPFORGE_CPU_DW_BF16_HOST_RULE="0")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(Path(__file__).parent)],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    assert res.stdout.split()[-1] == "3", res.stdout
    off = np.load(str(tmp_path / "x.npy") + ".out.npz")
    for i, a in enumerate(got):
        b = off[f"arr_{i}"]
        assert np.abs(a - b).max() / np.abs(b).max() < 2e-2


@needs_bf16
@pytest.mark.skipif(not OURS, reason="our dw kernel does not run in this process")
def test_dw_kernel_chunks_per_thread(tmp_path: Path) -> None:
    # OPFORGE_CPU_DW_CHUNKS (chunks of output rows a thread, read once: a child process) moves only
    # where the rows are cut: 1, 2 and 3 chunks a thread give the bytes of the default at 2 threads
    # and of 1 thread, on a 7-row map (fewer rows than chunks) and on 2 images of 30 rows
    # (3x3 with SiLU and 5x5: our kernel on every host, the host rule aside)
    g = Graph(17)
    h = g.act(g.conv("x", 16, 64), "relu6")
    a = g.conv(g.act(g.conv(h, 64, 64, 3, group=64), "silu"), 64, 24)
    b = g.conv(g.act(g.conv(h, 64, 64, 5, group=64, stride=2), "silu"), 64, 24)
    path = g.save(tmp_path / "m.onnx", (2, 16, 30, 30), [a, b])
    x = g.rng.standard_normal((2, 16, 30, 30)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    g7 = Graph(18)
    h7 = g7.act(g7.conv("x", 16, 96), "relu6")
    c = g7.conv(g7.act(g7.conv(h7, 96, 96, 3, group=96), "silu"), 96, 24)
    path7 = g7.save(tmp_path / "m7.onnx", (1, 16, 7, 7), [c])
    x7 = g7.rng.standard_normal((1, 16, 7, 7)).astype(np.float32)
    np.save(tmp_path / "x7.npy", x7)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from cpu_testing import bf16_run; "
            "from pathlib import Path; g, t = bf16_run(Path(sys.argv[1]), np.load(sys.argv[2]), 2); "
            "np.savez(sys.argv[4], *g); print(sum(v == 'dw:avx512_bf16' for v in t.values()))")
    for m, inp, n_dw in ((path, x, 2), (path7, x7, 1)):
        one, _ = run(m, inp, 1)
        want, types = check(m, inp)
        assert dw_count(types) == n_dw, types
        for chunks in ("1", "2", "3"):
            out = tmp_path / f"{m.stem}_{chunks}.npz"
            env = dict(os.environ, OPFORGE_CPU_DW_CHUNKS=chunks)
            res = subprocess.run([sys.executable, "-c", code, str(m), str(tmp_path / f"{'x' if m == path else 'x7'}.npy"),
                                  str(Path(__file__).parent), str(out)],
                                 env=env, capture_output=True, text=True, timeout=120, check=True)
            assert res.stdout.split()[-1] == str(n_dw), res.stdout
            got = np.load(out)
            for i, (w, o) in enumerate(zip(want, one, strict=True)):
                np.testing.assert_array_equal(got[f"arr_{i}"], w)
                np.testing.assert_array_equal(got[f"arr_{i}"], o)
