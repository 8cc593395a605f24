"""Channels-last MaxPool walked by output rows (kernels/max_pool.cpp row_max_nhwc_avx512, exec types
``max_nhwc_bf16_rows:avx512`` and ``max_nhwc_rows:avx512``): a convolution's nhwc output pooled
for the next convolution, bf16 into bf16 in a bf16 program, f32 otherwise. onnx.helper graphs (3x3 Conv + Relu -> MaxPool -> 3x3 Conv): UNet's 2x2/2,
ResNet's 3x3/2 pad 1, SqueezeNet's 3x3/2 ceil mode, 3x3/1, dilation 2, asymmetric pads, 16 to
100 channels (whole and partial vectors), batch 2. Results within the precision's rounding of
ONNX Runtime (f32), bit-identical at 1 and 2 threads, and the same bytes as the pixel walk
(OPFORGE_CPU_POOL_ROWS=0), NaN and inf included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

avx512 = pytest.mark.skipif(not str(load_core().cpu_isa()).startswith("avx512_core"),
                            reason="the channels-last pooling is AVX-512 only")
ROWS = {"bf16": "max_nhwc_bf16_rows:avx512", "f32": "max_nhwc_rows:avx512"}
PIXELS = {"bf16": "max_nhwc_bf16:avx512", "f32": "max_nhwc:avx512"}


def walk(precision: str, pool: dict[str, Any]) -> str:
    """The exec type: an f32 window 3 wide at column stride 1, dilation 1 is walked by columns
    (max_nhwc_cols:avx512, test_cpu_maxpool_cols.py), the rest by rows."""
    cols = (precision == "f32" and pool["kernel_shape"][1] == 3 and pool.get("strides", [1, 1])[1] == 1
            and pool.get("dilations", [1, 1])[1] == 1)
    return "max_nhwc_cols:avx512" if cols else ROWS[precision]


def pool_model(path: Path, c: int, size: tuple[int, int], seed: int, relu: bool = True, **pool: Any) -> Path:
    """x[N, 8, H, W] -> 3x3 Conv (8 -> c) (+ Relu) -> MaxPool(**pool) -> 3x3 Conv (c -> 8)."""
    g = OnnxGraph(seed)
    w = g.rng.standard_normal((c, 8, 3, 3)) * (2.0 / 72) ** 0.5
    h = g.node("Conv", ["x", g.const(w), g.const(g.rng.standard_normal(c) * 0.1)], pads=[1, 1, 1, 1])
    if relu:
        h = g.node("Relu", [h])
    h = g.node("MaxPool", [h], **pool)
    w2 = g.rng.standard_normal((8, c, 3, 3)) * (1.0 / (c * 9)) ** 0.5
    y = g.node("Conv", [h, g.const(w2), g.const(np.zeros(8))], pads=[1, 1, 1, 1])
    return g.save(path, (None, 8, *size), [y])  # type: ignore[arg-type]


def run(path: Path, x: np.ndarray, threads: int, precision: str) -> tuple[np.ndarray, list[str]]:
    """The output (a second run on other data, then a third on ``x`` that must repeat the
    first) and the MaxPool's exec types."""
    core = opforge.Core()
    cm = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": precision})
    req = cm.create_infer_request()
    out = np.array(req.infer({"x": x})[0])
    req.infer({"x": x * 0.5})
    np.testing.assert_array_equal(np.asarray(req.infer({"x": x})[0]), out)
    kinds = [p.exec_type for p in req.get_profiling_info() if p.node_type == "MaxPool" and p.status == "EXECUTED"]
    return out, kinds


POOLS: list[dict[str, Any]] = [
    dict(kernel_shape=[2, 2], strides=[2, 2]),                                  # UNet, VGG
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),               # ResNet
    dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),                     # SqueezeNet
    dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),               # Inception's branch
    dict(kernel_shape=[3, 3], strides=[1, 1], pads=[2, 2, 2, 2], dilations=[2, 2]),
    dict(kernel_shape=[2, 3], strides=[1, 2], pads=[0, 1, 1, 2]),               # asymmetric
]


@avx512
@pytest.mark.parametrize("precision", ["bf16", "f32"])
@pytest.mark.parametrize("c", [16, 40, 64, 100])
@pytest.mark.parametrize("pool", POOLS, ids=lambda p: "k{}s{}p{}d{}c{}".format(
    *(p.get(k, "-") for k in ("kernel_shape", "strides", "pads", "dilations", "ceil_mode"))))
def test_maxpool_rows_match_onnxruntime(tmp_path: Path, precision: str, c: int, pool: dict[str, Any]) -> None:
    path = pool_model(tmp_path / "m.onnx", c, (13, 17), seed=c, **pool)
    x = np.random.default_rng(c).standard_normal((2, 8, 13, 17)).astype(np.float32)
    one, _ = run(path, x, 1, precision)
    two, kinds = run(path, x, 2, precision)
    assert kinds == [walk(precision, pool)], kinds
    np.testing.assert_array_equal(two, one)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert one.shape == want.shape, (one.shape, want.shape)
    tol = 3e-2 if precision == "bf16" else 1e-5
    np.testing.assert_allclose(one, want, rtol=0, atol=tol * float(np.abs(want).max()))


def child(tmp_path: Path, env: dict[str, str], pool: dict[str, Any], precision: str, c: int = 24) -> tuple[np.ndarray, str]:
    """The output and the MaxPool's exec types at 2 threads in a child process with ``env``; NaN
    and +-inf in the input (no Relu: oneDNN's fused ReLU drops NaN); ``c`` pooled channels."""
    path = pool_model(tmp_path / "m.onnx", c, (12, 12), seed=5, relu=False, **pool)
    x = np.random.default_rng(5).standard_normal((1, 8, 12, 12)).astype(np.float32)
    x[0, :, 3, 4] = np.nan
    x[0, 2, 8, 8] = np.inf
    x[0, 5, 0, 11] = -np.inf
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_maxpool_rows import run; "
            "from pathlib import Path; out, k = run(Path(sys.argv[1]), np.load(sys.argv[2]), 2, sys.argv[4]); "
            "np.save(sys.argv[2] + '.out.npy', out); print(repr(k))")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(Path(__file__).parent), precision],
                         env=dict(os.environ, **env), capture_output=True, text=True, timeout=120, check=True)
    return np.load(str(tmp_path / "x.npy") + ".out.npy"), res.stdout


@avx512
@pytest.mark.parametrize("precision", ["bf16", "f32"])
@pytest.mark.parametrize("pool", POOLS[:3], ids=["2x2s2", "3x3s2p1", "3x3s2ceil"])
def test_maxpool_rows_same_bytes_as_pixel_walk(tmp_path: Path, pool: dict[str, Any], precision: str) -> None:
    # OPFORGE_CPU_POOL_ROWS=0 (read once a process): the pixel walk, the same bytes, NaN included
    on, kinds_on = child(tmp_path, {}, pool, precision)
    off, kinds_off = child(tmp_path, {"OPFORGE_CPU_POOL_ROWS": "0"}, pool, precision)
    assert kinds_on == f"[{ROWS[precision]!r}]\n" and kinds_off == f"[{PIXELS[precision]!r}]\n", (kinds_on, kinds_off)
    assert np.isnan(on).any()
    np.testing.assert_array_equal(on, off)


@avx512
@pytest.mark.parametrize("c", [8, 24, 40, 64, 100, 130])
@pytest.mark.parametrize("pool", [POOLS[1], POOLS[2], POOLS[4]], ids=["3x3s2p1", "3x3s2ceil", "3x3d2"])
def test_maxpool_rows_interleaved_same_bytes(tmp_path: Path, pool: dict[str, Any], c: int) -> None:
    # The f32 row walk keeps up to four 16-channel blocks in flight (row_max_blocks: 1, 2, 3 and
    # 4 blocks, partial last blocks); OPFORGE_CPU_POOL_INTERLEAVE=0 (read once a process) keeps one
    # block at a time. Same exec type, the same bytes, NaN and inf included.
    on, kinds_on = child(tmp_path, {}, pool, "f32", c)
    off, kinds_off = child(tmp_path, {"OPFORGE_CPU_POOL_INTERLEAVE": "0"}, pool, "f32", c)
    assert kinds_on == kinds_off == f"[{ROWS['f32']!r}]\n", (kinds_on, kinds_off)
    assert np.isnan(on).any()
    np.testing.assert_array_equal(on, off)
