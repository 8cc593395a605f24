"""An int8 convolution with zero points (kernels/quantized_convolution.cpp fold_zero_points):
oneDNN 3.2 gives it AMX's older jit_1x1 / jit kernels, and its brgconv ones only without zero
points, so the source zero point becomes part of the bias (b - s_x s_w z_x sum(w), exact where
every cell a window reads is real data or the zero point) and the destination's a final shift
(+ z_y s_y before the division by s_y). The exec type says ``+zp_folded``. A padded 2D
convolution with a source zero point reads a source the kernel pads itself with that zero point
(``+zp_folded+prepad``); grouped and depthwise ones keep their zero points. The integer sums are
the same; the f32 requantization is rounded in another order, so every output stays within one
quantization step of ONNX Runtime (and of the unfolded kernel, OPFORGE_CPU_INT8_ZP_FOLD=0) and
1 and 2 threads give the same bytes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")
from cpu_testing import infer_twice  # noqa: E402
from int8_testing import assert_close_steps, output_scale, quantize  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)


class Graph(OnnxGraph):
    def conv(self, x: str, cin: int, cout: int, k: int = 1, group: int = 1, pad: int | None = None) -> str:
        w = self.rng.standard_normal((cout, cin // group, k, k)) * (2.0 / (cin // group * k * k)) ** 0.5
        b = self.rng.standard_normal(cout) * 0.1
        p = k // 2 if pad is None else pad
        return self.node("Conv", [x, self.const(w), self.const(b)], group=group, pads=[p] * 4)

    def relu(self, x: str) -> str:
        return self.node("Relu", [x])


def one_convolution(path: Path, kind: str, c: int, shape: tuple[int, ...]) -> Path:
    """One 1x1 convolution whose zero points fold, so that ONNX Runtime's result is one rounding
    away: ``src`` reads the input (zero point ~128 after N(0, 1) calibration) and ends in a ReLU
    (destination zero point 0); ``dst`` reads ReLU(x) (source zero point 0) and is linear;
    ``both`` reads x and is linear; ``residual`` is ``both`` plus the input added in int8 (the
    sum post-op, with the residual's own zero point)."""
    g = Graph(5)
    x = g.relu("x") if kind == "dst" else "x"
    y = g.conv(x, c, c)
    if kind == "src":
        y = g.relu(y)
    if kind == "residual":
        y = g.node("Add", [y, "x"])
    return g.save(path, shape, [y])


def inverted_residual(path: Path, c: int) -> Path:
    """MobileNetV2's block: a 1x1 expansion reading x (source zero point) with ReLU, a padded
    depthwise 3x3 (not folded), a linear 1x1 projection (destination zero point), the residual
    Add in int8, and a 1x1 + ReLU after it."""
    g = Graph(5)
    e = g.relu(g.conv("x", c, 3 * c))
    d = g.relu(g.conv(e, 3 * c, 3 * c, k=3, group=3 * c))
    p = g.conv(d, 3 * c, c)
    s = g.node("Add", [p, "x"])
    out = g.conv(g.relu(g.conv(s, c, 2 * c)), 2 * c, 24)
    return g.save(path, (1, c, 8, 8), [out])


def padded_conv(path: Path, k: int, pads: list[int], stride: int, shape: tuple[int, ...]) -> Path:
    """One padded convolution reading x (source zero point ~128), linear (destination zero
    point): the kernel pads x itself with the zero point and folds both."""
    g = Graph(9)
    w = g.rng.standard_normal((24, shape[1], k, k)) * (2.0 / (shape[1] * k * k)) ** 0.5
    out = g.node("Conv", ["x", g.const(w), g.const(g.rng.standard_normal(24) * 0.1)], pads=pads, strides=[stride, stride])
    return g.save(path, shape, [out])


def run(path: Path, x: np.ndarray, threads: int) -> tuple[np.ndarray, dict[str, str]]:
    got, rows = infer_twice(path, {"x": x}, threads, "f32")
    return got[0], {r.node_name: r.exec_type for r in rows if r.node_type == "QuantizedConvolution"}


def quantized(tmp_path: Path, model: Path, shape: tuple[int, ...], per_channel: bool) -> Path:
    return quantize(model, tmp_path / "q.onnx", shape, per_channel, "u8")


def unfolded(q: Path, x: np.ndarray, tmp_path: Path) -> tuple[np.ndarray, str]:
    """The outputs and exec types of ``q`` in a child process with OPFORGE_CPU_INT8_ZP_FOLD=0 (the
    switch is read once a process): oneDNN's own zero points."""
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_int8_zp_fold import run; "
            "from pathlib import Path; g, t = run(Path(sys.argv[1]), np.load(sys.argv[2]), 1); "
            "np.save(sys.argv[2] + '.out.npy', g); print(repr(sorted(t.values())))")
    env = dict(os.environ, OPFORGE_CPU_INT8_ZP_FOLD="0")
    res = subprocess.run([sys.executable, "-c", code, str(q), str(tmp_path / "x.npy"), str(Path(__file__).parent)],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    return np.load(str(tmp_path / "x.npy") + ".out.npy"), res.stdout


def check(q: Path, x: np.ndarray, tmp_path: Path, steps: float = 1.0, exact: float = 0.99) -> dict[str, str]:
    """1 and 2 threads: the same bytes; within ``steps`` of ONNX Runtime's int8 with ``exact`` of
    the elements equal (a residual Add fused as oneDNN's sum post-op skips the QDQ graph's rounding
    of the convolution's own result, with or without the fold: about 80 % exact; a chain of
    quantized steps compounds one-step differences), and within one step of the unfolded kernel
    (OPFORGE_CPU_INT8_ZP_FOLD=0) with 99 % equal."""
    one, types1 = run(q, x, 1)
    two, types2 = run(q, x, 2)
    np.testing.assert_array_equal(two, one)
    step = output_scale(q)
    sess = ort.InferenceSession(str(q), providers=["CPUExecutionProvider"])
    diff = np.abs(one.astype(np.float64) - sess.run(None, {"x": x})[0]) / step
    assert diff.max() <= steps + 1e-4 and np.mean(diff < 1e-4) >= exact, (diff.max(), np.mean(diff < 1e-4))
    off, off_types = unfolded(q, x, tmp_path)
    assert "+zp_folded" not in off_types, off_types
    assert_close_steps(one, off, step)
    assert {k: v.split("+pixels")[0] for k, v in types2.items()} == types1
    for t in types1.values():  # a folded kernel is a brgconv one, or the kernel the zero points had
        assert "+zp_folded" not in t or t.startswith("brg") or t.split("+zp_folded")[0] in off_types, (types1, off_types)
    if "jit_1x1:avx512_core_amx" in off_types:  # what the fold is for
        assert any("+zp_folded" in t for t in types1.values()), types1
    return types1


def amx(types: dict[str, str]) -> bool:
    return any("amx" in t for t in types.values())


@pytest.mark.parametrize(("kind", "per_channel"), [("src", True), ("dst", True), ("both", True), ("both", False),
                                                 ("residual", True), ("residual", False)])
def test_one_folded_convolution_within_one_step(tmp_path: Path, kind: str, per_channel: bool) -> None:
    shape = (2, 48, 7, 9)  # 126 pixels: not a multiple of 16
    q = quantized(tmp_path, one_convolution(tmp_path / "f32.onnx", kind, 48, shape), shape, per_channel)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 1.3
    types = check(q, x, tmp_path, exact=0.75 if kind == "residual" else 0.99)
    if amx(types):
        assert len(types) == 1 and "+zp_folded" in next(iter(types.values())), types


@pytest.mark.parametrize(("batch", "size"), [(1, (8, 8)), (3, (5, 5))])
def test_batches(tmp_path: Path, batch: int, size: tuple[int, int]) -> None:
    shape = (batch, 32, *size)
    q = quantized(tmp_path, one_convolution(tmp_path / "f32.onnx", "both", 32, shape), shape, True)
    x = np.random.default_rng(batch).standard_normal(shape).astype(np.float32)
    types = check(q, x, tmp_path)
    if amx(types):
        assert all("+zp_folded" in t for t in types.values()), types


def test_inverted_residual_block(tmp_path: Path) -> None:
    q = quantized(tmp_path, inverted_residual(tmp_path / "f32.onnx", 32), (1, 32, 8, 8), True)
    x = np.random.default_rng(2).standard_normal((1, 32, 8, 8)).astype(np.float32)
    types = check(q, x, tmp_path, steps=2.0, exact=0.5)
    if amx(types):
        # the expansion, the projection and the 1x1 after the residual sum fold; the depthwise
        # 3x3 (padded) does not
        assert sum("+zp_folded" in t for t in types.values()) >= 3, types
    assert not any("+zp_folded" in t for t in types.values() if "dw" in t), types


@pytest.mark.parametrize(("k", "pads", "stride", "cin"), [(3, [1, 1, 1, 1], 1, 64), (3, [0, 1, 1, 0], 1, 64),
                                                         (5, [2, 2, 2, 2], 2, 64), (1, [1, 1, 1, 1], 1, 64),
                                                         (3, [1, 1, 1, 1], 1, 16)])
def test_padded_convolution_over_a_source_padded_with_the_zero_point(tmp_path: Path, k: int, pads: list[int],
                                                                     stride: int, cin: int) -> None:
    # batch 2: the border of each image is filled; fewer than 64 source channels keep oneDNN's
    # zero points (kMinPrepadChannels)
    shape = (2, cin, 9, 7)
    q = quantized(tmp_path, padded_conv(tmp_path / "f32.onnx", k, pads, stride, shape), shape, True)
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    types = check(q, x, tmp_path)
    assert len(types) <= 1, types  # (none on a host without VNNI, where the guard keeps some in f32)
    t = next(iter(types.values()), "")
    assert "+zp_folded" not in t or t.endswith("+zp_folded+prepad"), t
    if cin < 64:
        assert "+zp_folded" not in t, t
    elif k == 3 and amx(types):
        assert t.startswith("brgconv:") and t.endswith("+zp_folded+prepad"), t
