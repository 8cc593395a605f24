"""Row chunks of bf16 convolutions at 2 threads (core/conv_row_split.cpp on core/chunk_pool.cpp),
measured and not enabled: only with OPFORGE_CPU_CONV_ROWS=1 (all but depthwise) or =dw (depthwise
too), read once a process, so child processes run the cases with it. A convolution that is not a 1x1
of unit stride (3x3, 5x5, grouped, strided, dilated, depthwise) then runs as blocks of output rows,
each a one-thread oneDNN primitive over the band of input rows it reads, claimed by the threads
from a shared counter: the exec type says ``+rowsK``. A chunk's padding is the whole convolution's
where its band touches the image's top or bottom edge and none inside; it reads the same packed
weights and bias and runs the same post-ops (ReLU, ReLU6, SiLU, a residual summed in place or read
as a binary post-op), so every output is the same f32 sum of the same bf16 products as in the
unsplit primitive: bit-exact against the 1-thread program, and within bf16 rounding of ONNX
Runtime's f32. Without the switch nothing is split and the same cases hold."""

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
from cpu_testing import bf16_run as run  # noqa: E402
from cpu_testing import check_bf16_split  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")


class Graph(OnnxGraph):
    def conv(self, x: str, cin: int, cout: int, k: int = 1, group: int = 1, stride: int = 1,
             dilation: int = 1, pads: list[int] | None = None) -> str:
        w = self.rng.standard_normal((cout, cin // group, k, k)) * (2.0 / (cin // group * k * k)) ** 0.5
        b = self.rng.standard_normal(cout) * 0.1
        p = pads if pads is not None else [(k // 2) * dilation] * 4
        return self.node("Conv", [x, self.const(w), self.const(b)], group=group, pads=p, strides=[stride, stride],
                         dilations=[dilation, dilation])

    def act(self, x: str, kind: str) -> str:
        if kind == "relu6":
            return self.node("Clip", [x, self.const(0.0), self.const(6.0)])
        if kind == "silu":
            return self.node("Mul", [x, self.node("Sigmoid", [x])])
        return x


def check(path: Path, x: np.ndarray) -> dict[str, str]:
    """Bit-exact at 2 threads (split) and 1 (unsplit); within bf16 rounding of ONNX Runtime f32.
    The 2-thread exec types."""
    return check_bf16_split(path, x, "+rows")[1]


def row_split(types: dict[str, str]) -> list[str]:
    return sorted(n for n, t in types.items() if "+rows" in t)


# what this process splits (children of test_rows_on_request set it)
MODE = os.environ.get("OPFORGE_CPU_CONV_ROWS", "0")
ROWS = MODE in ("1", "dw")
DW_MODE = MODE == "dw"


def amx(types: dict[str, str]) -> bool:
    """Whether oneDNN runs the dense convolutions with its AMX brgconv here."""
    return any("brgconv" in t and "amx" in t for t in types.values())


def brdgmm(types: dict[str, str]) -> bool:
    """Whether oneDNN runs the depthwise convolutions with brdgmm_dw here (an AVX512_BF16 host)."""
    return any("brdgmm" in t for t in types.values())


CASES = [
    # channels, size, kernel, stride, dilation, batch, activation, explicit pads
    (40, 32, 3, 1, 1, 1, "relu6", None),        # MobileNetV2
    (96, 56, 3, 2, 1, 1, "relu6", None),        # stride 2
    (72, 40, 5, 1, 1, 2, "silu", None),         # EfficientNet's 5x5, two images
    (88, 28, 7, 1, 1, 1, "none", None),         # EdgeNeXt / ConvNeXt 7x7
    (36, 33, 3, 1, 2, 3, "relu6", None),        # dilation 2, channels not a multiple of 16, 3 images
    (56, 30, 5, 2, 1, 2, "silu", None),         # 5x5 stride 2 on an even map
    (48, 40, 3, 2, 1, 1, "relu6", [0, 0, 1, 1]),  # TF "SAME" stride 2: padding only bottom/right
    (24, 45, 3, 1, 1, 1, "none", [2, 1, 0, 1]),   # uneven top/bottom padding
]


@needs_bf16
@pytest.mark.parametrize(("channels", "size", "k", "stride", "dilation", "batch", "act", "pads"), CASES)
def test_depthwise_rows_bit_exact(tmp_path: Path, channels: int, size: int, k: int, stride: int, dilation: int,
                                  batch: int, act: str, pads: list[int] | None) -> None:
    # 1x1 -> depthwise (activation) -> 1x1, as in an inverted residual block: bf16 in and out of
    # the depthwise convolution, large enough that the step runs on 2 threads (step_threads.cpp)
    g = Graph(channels + size + k)
    h = g.act(g.conv("x", 16, channels), "relu6")
    h = g.act(g.conv(h, channels, channels, k, group=channels, stride=stride, dilation=dilation, pads=pads), act)
    out = g.conv(h, channels, 24)
    path = g.save(tmp_path / "m.onnx", (batch, 16, size, size), [out])
    x = g.rng.standard_normal((batch, 16, size, size)).astype(np.float32)
    types = check(path, x)
    if brdgmm(types):
        assert len(row_split(types)) == (1 if DW_MODE else 0), types
        assert all("ref" not in t for t in types.values()), types


@needs_bf16
def test_depthwise_residual_bit_exact(tmp_path: Path) -> None:
    # a depthwise convolution plus its own input (a convolutional position encoding, x + dw(x)):
    # the residual is cut into the same row blocks as the destination
    g = Graph(3)
    h = g.node("Relu", [g.conv("x", 16, 64)])
    y = g.node("Add", [g.conv(h, 64, 64, 3, group=64), h])
    y = g.node("Add", [g.act(g.conv(y, 64, 64, 5, group=64), "silu"), y])
    out = g.conv(y, 64, 32)
    path = g.save(tmp_path / "m.onnx", (2, 16, 28, 28), [out, y])
    x = g.rng.standard_normal((2, 16, 28, 28)).astype(np.float32)
    types = check(path, x)
    if brdgmm(types):
        assert len(row_split(types)) == (2 if DW_MODE else 0), types


def run_child(mode: str, select: str, tmp_path: Path) -> str:
    """This file's tests matching ``select`` in a child process with OPFORGE_CPU_CONV_ROWS=mode
    (and oneDNN's depthwise primitive, whose chunks these are, instead of our dw kernel)."""
    env = dict(os.environ, OPFORGE_CPU_CONV_ROWS=mode, OPFORGE_CPU_DW_KERNEL="0")
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "-k", select, str(Path(__file__))],
                         env=env, capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    return res.stdout


@needs_bf16
@pytest.mark.skipif(MODE != "0", reason="runs in the parent process only")
def test_rows_on_request(tmp_path: Path) -> None:
    # every bit-exact case with the chunks on, depthwise ones too (dw); with 1, depthwise ones stay whole
    out = run_child("dw", "bit_exact or exact_twin or do_not_take", tmp_path)
    assert "18 passed" in out, out[-500:]
    out = run_child("1", "test_depthwise", tmp_path)
    assert "9 passed" in out, out[-500:]


DENSE = [
    # cin, cout, size, kernel, stride, dilation, group, batch
    (64, 64, 28, 3, 1, 1, 1, 1),     # ResNet's 3x3
    (40, 56, 30, 3, 2, 1, 1, 2),     # stride 2, odd channel counts, two images
    (32, 48, 24, 5, 1, 2, 1, 1),     # 5x5, dilation 2
    (96, 96, 28, 3, 1, 1, 6, 1),     # RegNet's groups of 16 (merged into groups of 32: regroup_bf16)
    (128, 128, 14, 3, 1, 1, 4, 3),   # groups of 32, three images
    (64, 128, 32, 1, 2, 1, 1, 1),    # a strided 1x1 (ResNet's downsampling shortcut)
]


@needs_bf16
@pytest.mark.parametrize(("cin", "cout", "size", "k", "stride", "dilation", "group", "batch"), DENSE)
def test_dense_and_grouped_rows_bit_exact(tmp_path: Path, cin: int, cout: int, size: int, k: int, stride: int,
                                          dilation: int, group: int, batch: int) -> None:
    g = Graph(cin + cout + k + group)
    h = g.node("Relu", [g.conv("x", 16, cin, 3)])
    h = g.node("Relu", [g.conv(h, cin, cout, k, group=group, stride=stride, dilation=dilation)])
    out = g.conv(h, cout, 32)
    path = g.save(tmp_path / "m.onnx", (batch, 16, size, size), [out])
    x = g.rng.standard_normal((batch, 16, size, size)).astype(np.float32)
    types = check(path, x)
    if amx(types):
        assert len(row_split(types)) == (2 if ROWS else 0), types  # the 3x3 before it and the one under test
        assert all("ref" not in t for t in types.values()), types


@needs_bf16
def test_basic_blocks_with_residual_bit_exact(tmp_path: Path) -> None:
    # ResNet-18's basic block twice: 3x3 -> ReLU -> 3x3 + x -> ReLU (the residual summed in place
    # or as a binary post-op over the chunk's rows), then a strided block with a 1x1 shortcut
    g = Graph(7)
    h = g.node("Relu", [g.conv("x", 16, 64, 3)])
    for _ in range(2):
        y = g.node("Relu", [g.conv(h, 64, 64, 3)])
        h = g.node("Relu", [g.node("Add", [g.conv(y, 64, 64, 3), h])])
    y = g.node("Relu", [g.conv(h, 64, 128, 3, stride=2)])
    h = g.node("Relu", [g.node("Add", [g.conv(y, 128, 128, 3), g.conv(h, 64, 128, 1, stride=2, pads=[0] * 4)])])
    path = g.save(tmp_path / "m.onnx", (2, 16, 28, 28), [h])
    x = g.rng.standard_normal((2, 16, 28, 28)).astype(np.float32)
    types = check(path, x)
    if amx(types):
        assert len(row_split(types)) == (8 if ROWS else 0), types  # every 3x3 and the strided 1x1


@needs_bf16
def test_regrouped_non_finite_runs_exact_twin(tmp_path: Path) -> None:
    # a merged-groups convolution (regroup_bf16) screens its source: with an inf in it, the exact
    # grouped primitive runs whole, not the row chunks of the merged one; still as at 1 thread
    g = Graph(13)
    h = g.conv("x", 16, 96, 3)
    out = g.conv(h, 96, 96, 3, group=6)
    path = g.save(tmp_path / "m.onnx", (1, 16, 28, 28), [out])
    x = g.rng.standard_normal((1, 16, 28, 28)).astype(np.float32)
    x[0, 3, 10, 10] = np.inf
    one, _ = run(path, x, 1)
    two, types = run(path, x, 2)
    if amx(types):
        assert len(row_split(types)) == (2 if ROWS else 0), types
    np.testing.assert_array_equal(two[0], one[0])
    assert np.isnan(two[0]).any() and np.isfinite(two[0]).any()


@needs_bf16
def test_convolutions_the_rows_do_not_take(tmp_path: Path) -> None:
    # a 1x1 of unit stride (the pixel split's) and a 7x7 map too small for 2 threads (one step)
    g = Graph(5)
    h = g.node("Relu", [g.conv("x", 16, 64, 1)])
    h = g.node("Relu", [g.conv(h, 64, 64, 1)])
    out = g.conv(g.node("MaxPool", [h], kernel_shape=[4, 4], strides=[4, 4]), 64, 32, 3)
    path = g.save(tmp_path / "m.onnx", (1, 16, 28, 28), [out])
    x = g.rng.standard_normal((1, 16, 28, 28)).astype(np.float32)
    types = check(path, x)
    assert not row_split(types), types


@needs_bf16
@pytest.mark.skipif(MODE != "0", reason="runs in the parent process only")
def test_rows_switch(tmp_path: Path) -> None:
    # OPFORGE_CPU_CONV_ROWS=1 in a child process: the same outputs as this process's oneDNN
    # 2-thread primitives, with the chunks
    g = Graph(11)
    h = g.node("Relu", [g.conv("x", 16, 64, 3)])
    out = g.conv(g.node("Relu", [g.conv(h, 64, 64, 3)]), 64, 32)
    path = g.save(tmp_path / "m.onnx", (1, 16, 32, 32), [out])
    x = g.rng.standard_normal((1, 16, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    got, types = run(path, x, 2)
    assert not row_split(types), types
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_bf16_conv_rows import run; "
            "from pathlib import Path; g, t = run(Path(sys.argv[1]), np.load(sys.argv[2]), 2); "
            "np.save(sys.argv[2] + '.out.npy', g[0]); print(repr(sorted(t.values())))")
    env = dict(os.environ, OPFORGE_CPU_CONV_ROWS="1")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(Path(__file__).parent)],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    on = np.load(str(tmp_path / "x.npy") + ".out.npy")
    np.testing.assert_array_equal(on, got[0])
    if amx(types):
        assert res.stdout.count("+rows") == 2, res.stdout
