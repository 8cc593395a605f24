"""A bf16 program's Clamp reads and writes bf16 (kernels/clamp.cpp, emit.py ``_bf16_passes``).

RexNet's blocks end ``depthwise -> squeeze-excitation scale (Multiply) -> ReLU6 (Clip 0..6) ->
1x1 convolution``: no convolution takes the Clip as a post-op, so it was a step of its own that
read f32, and the scale, reading the depthwise convolution's bf16 nhwc output, had to write f32,
which oneDNN's binary has no JIT kernel for (``reorder+ref``). Now the scale writes bf16
(``jit:uni``) and the Clamp clamps bf16 -> bf16 (exec type ``loop:bf16``), or bf16 -> f32 where a
reader takes f32 (``loop:bf16_f32``). onnx.helper RexNet blocks (seeded weights, channel counts
16-228) under the bf16 hint: within bf16 rounding of ONNX Runtime, 1 and 2 threads bit-identical,
NaN kept; OPFORGE_CPU_BF16_CLAMP=0 restores the f32 Clamp."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import opforge
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

pytestmark = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")

#: hosts whose oneDNN runs bf16 convolutions natively (the depthwise one then writes bf16)
NATIVE_BF16 = str(load_core().cpu_isa()).startswith(("avx512_core_bf16", "avx512_core_amx"))


def rexnet_block(path: Path, cin: int, mid: int, cout: int, size: tuple[int, int], seed: int,
                 clip_output: bool = False) -> Path:
    """x -> 1x1 (cin -> mid) + SiLU -> depthwise 3x3 -> squeeze-excitation (ReduceMean, 1x1,
    ReLU, 1x1, Sigmoid) scale -> Clip(0, 6) -> 1x1 (mid -> cout); ``clip_output``: the Clip's
    result is a model output too (a reader that takes f32)."""
    g = OnnxGraph(seed)
    e = g.conv("x", cin, mid, 1)
    e = g.node("Mul", [e, g.node("Sigmoid", [e])])
    d = g.conv(e, mid, mid, 3, group=mid)
    m = g.node("ReduceMean", [d], axes=[2, 3], keepdims=1)
    s = g.node("Sigmoid", [g.conv(g.relu(g.conv(m, mid, max(mid // 12, 4), 1)), max(mid // 12, 4), mid, 1)])
    c = g.node("Clip", [g.node("Mul", [d, s]), g.const(0.0), g.const(6.0)])
    y = g.conv(c, mid, cout, 1)
    return g.save(path, (1, cin, *size), [y] + ([c] if clip_output else []))


def run(path: Path, x: np.ndarray, threads: int) -> tuple[list[np.ndarray], list[tuple[str, str]]]:
    """bf16 outputs (repeatable after a run on other data) and the executed (type, exec type)."""
    core = opforge.Core()
    cm = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "bf16"})
    req = cm.create_infer_request()
    got = [np.array(o) for o in req.infer({"x": x}).to_tuple()]
    req.infer({"x": x * 0.5})
    for a, b in zip(req.infer({"x": x}).to_tuple(), got, strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)
    return got, [(p.node_type, p.exec_type) for p in req.get_profiling_info() if p.status == "EXECUTED"]


def check(path: Path, x: np.ndarray) -> list[tuple[str, str]]:
    one, _ = run(path, x, 1)
    two, steps = run(path, x, 2)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for a, b, w in zip(one, two, want, strict=True):
        np.testing.assert_array_equal(b, a)
        scale = max(float(np.abs(w[np.isfinite(w)]).max(initial=0.0)), 1e-6)
        np.testing.assert_allclose(a, w, rtol=0, atol=3e-2 * scale, equal_nan=True)
    return steps


CASES = [(16, 96, 27, (28, 26)), (27, 162, 38, (14, 14)), (38, 228, 50, (9, 11)), (8, 20, 8, (5, 7))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_rexnet_block_clamps_bf16(tmp_path: Path, case: tuple[int, int, int, tuple[int, int]]) -> None:
    cin, mid, cout, size = case
    path = rexnet_block(tmp_path / "m.onnx", cin, mid, cout, size, seed=mid)
    x = np.random.default_rng(mid).standard_normal((1, cin, *size)).astype(np.float32)
    steps = check(path, x)
    clamps = [e for t, e in steps if t == "Clamp"]
    assert len(clamps) == 1, steps
    if NATIVE_BF16:
        assert clamps == ["loop:bf16"], steps
        assert [e for t, e in steps if t == "Multiply"] != ["reorder+ref"], steps


def test_clamp_read_as_model_output_writes_f32(tmp_path: Path) -> None:
    path = rexnet_block(tmp_path / "m.onnx", 16, 48, 16, (12, 10), seed=4, clip_output=True)
    x = np.random.default_rng(4).standard_normal((1, 16, 12, 10)).astype(np.float32)
    steps = check(path, x)
    if NATIVE_BF16:
        assert [e for t, e in steps if t == "Clamp"] == ["loop:bf16_f32"], steps


def test_nan_where_the_f32_clamp_has_nan(tmp_path: Path) -> None:
    # NaN in the input: the bf16 Clamp keeps it where the f32 Clamp (switch off) does. (Not
    # against ONNX Runtime: oneDNN's ReLU post-op of the squeeze-excitation convolution turns
    # the NaN of the pooled mean into 0 there, with or without this kernel.)
    path = rexnet_block(tmp_path / "m.onnx", 8, 32, 8, (6, 6), seed=6)
    x = np.random.default_rng(6).standard_normal((1, 8, 6, 6)).astype(np.float32)
    x[0, :, 2, 3] = np.nan
    on, _ = child(path, x, tmp_path, {})
    off, _ = child(path, x, tmp_path, {"OPFORGE_CPU_BF16_CLAMP": "0"})
    assert np.isnan(on).any()
    np.testing.assert_array_equal(np.isnan(on), np.isnan(off))
    np.testing.assert_allclose(on, off, rtol=0, atol=3e-2 * float(np.abs(off[np.isfinite(off)]).max()), equal_nan=True)


def child(path: Path, x: np.ndarray, tmp: Path, env: dict[str, str]) -> tuple[np.ndarray, list[tuple[str, str]]]:
    np.save(tmp / "x.npy", x)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_bf16_clamp import run; "
            "from pathlib import Path; out, s = run(Path(sys.argv[1]), np.load(sys.argv[2]), 2); "
            "np.save(sys.argv[2] + '.out.npy', out[0]); print(repr(s))")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp / "x.npy"), str(Path(__file__).parent)],
                         env=dict(os.environ, **env), capture_output=True, text=True, timeout=120, check=True)
    return np.load(str(tmp / "x.npy") + ".out.npy"), ast.literal_eval(res.stdout.strip().splitlines()[-1])


def test_switch_off_clamps_f32(tmp_path: Path) -> None:
    path = rexnet_block(tmp_path / "m.onnx", 27, 162, 38, (14, 14), seed=8)
    x = np.random.default_rng(8).standard_normal((1, 27, 14, 14)).astype(np.float32)
    on, steps_on = child(path, x, tmp_path, {})
    off, steps_off = child(path, x, tmp_path, {"OPFORGE_CPU_BF16_CLAMP": "0"})
    assert not [e for t, e in steps_off if t == "Clamp" and "bf16" in e], steps_off
    if NATIVE_BF16:
        assert [e for t, e in steps_on if t == "Clamp"] == ["loop:bf16"], steps_on
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for got in (on, off):
        np.testing.assert_allclose(got, want, rtol=0, atol=3e-2 * float(np.abs(want).max()))
