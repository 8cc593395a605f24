"""Data-movement nodes that move nothing are taken out of the graph (passes/noop_moves.py).

GhostNet's ghost module, ``Concat(primary 1x1 conv, cheap depthwise conv)[:, :oup]``, slices
every channel when ``oup`` is even: the Slice was an Identity copy that only read plain data, so
its Concat reordered both channels-last inputs to plain and every reader after it got plain data.
onnx.helper ghost bottlenecks (seeded weights; channel counts 8+8, 12+12, 20+20: multiples of 16
and not; with and without a hard-sigmoid squeeze-excitation and a residual Add) in f32 and bf16:
outputs within the precision's rounding of ONNX Runtime, bit-identical at 1 and 2 threads, no
Identity step left; a ghost module whose Slice really drops a channel (odd ``oup``) keeps it;
a Pad by zero and an identity Transpose go too; a move that a model output reads stays; and
OPFORGE_CPU_NOOP_MOVES=0 keeps the Identity step with the same outputs within tolerance."""

from __future__ import annotations

import ast
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
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

AVX512 = str(load_core().cpu_isa()).startswith("avx512_core")
#: bf16 cases only where the bf16 hint is accepted (a host with bf16 arithmetic)
PRECISIONS = ["f32", pytest.param("bf16", marks=pytest.mark.skipif(
    not bool(load_core().native_bf16()), reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)"))]


def ghost(g: OnnxGraph, x: str, cin: int, oup: int, relu: bool) -> str:
    """timm's GhostModule: a 1x1 convolution to ceil(oup / 2) channels, a depthwise 3x3 of its
    output, both concatenated along the channels and sliced to the first ``oup``."""
    init = (oup + 1) // 2
    p = g.conv(x, cin, init, 1)
    if relu:
        p = g.relu(p)
    c = g.conv(p, init, init, 3, group=init)
    if relu:
        c = g.relu(c)
    cat = g.node("Concat", [p, c], axis=1)
    return g.node("Slice", [cat, g.const([0], np.int64), g.const([oup], np.int64), g.const([1], np.int64),
                            g.const([1], np.int64)])


def ghost_model(path: Path, cin: int, mid: int, size: tuple[int, int], seed: int, se: bool,
                out_too: bool = False) -> Path:
    """A GhostNet bottleneck: ghost(cin -> mid, ReLU) [-> squeeze-excitation with a hard
    sigmoid] -> ghost(mid -> cin, no ReLU) + x; ``out_too``: the first ghost module's Slice is a
    model output as well."""
    g = OnnxGraph(seed)
    h = ghost(g, "x", cin, mid, relu=True)
    first = h
    if se:
        m = g.node("ReduceMean", [h], axes=[2, 3], keepdims=1)
        r = g.relu(g.conv(m, mid, max(mid // 4, 4), 1))
        gate = g.node("HardSigmoid", [g.conv(r, max(mid // 4, 4), mid, 1)], alpha=1.0 / 6, beta=0.5)
        h = g.node("Mul", [h, gate])
    y = g.node("Add", [ghost(g, h, mid, cin, relu=False), "x"])
    return g.save(path, (1, cin, *size), [y] + ([first] if out_too else []))


def run(path: Path, x: np.ndarray, threads: int, precision: str) -> tuple[list[np.ndarray], list[tuple[str, str]]]:
    """The outputs (a run on other data between must not change them) and the executed steps'
    (node type, exec type)."""
    got, rows = infer_twice(path, {"x": x}, threads, precision)
    return got, [(p.node_type, p.exec_type) for p in rows]


def check(path: Path, x: np.ndarray, precision: str) -> list[tuple[str, str]]:
    """1 and 2 threads bit-identical and within the precision's rounding of ONNX Runtime (f32:
    1e-5 of the output's largest magnitude; bf16: 3e-2); the steps at 2 threads."""
    one, _ = run(path, x, 1, precision)
    two, steps = run(path, x, 2, precision)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    tol = 3e-2 if precision == "bf16" else 1e-5
    for a, b, w in zip(one, two, want, strict=True):
        np.testing.assert_array_equal(b, a)
        assert a.shape == w.shape, (a.shape, w.shape)
        scale = max(float(np.abs(w).max()), 1e-6)
        np.testing.assert_allclose(a, w, rtol=0, atol=tol * scale)
    return steps


CASES = [
    # (input channels, middle channels, size, squeeze-excitation)
    (16, 16, (28, 24), False),  # GhostNet's first block: 8 + 8 channels
    (24, 24, (14, 15), True),   # 12 + 12: no multiple of 8
    (40, 40, (7, 9), True),     # 20 + 20
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}{'-se' if c[3] else ''}")
def test_ghost_bottleneck_without_copies(tmp_path: Path, precision: str,
                                         case: tuple[int, int, tuple[int, int], bool]) -> None:
    cin, mid, size, se = case
    path = ghost_model(tmp_path / "m.onnx", cin, mid, size, seed=cin, se=se)
    x = np.random.default_rng(cin).standard_normal((1, cin, *size)).astype(np.float32)
    steps = check(path, x, precision)
    types = [t for t, _ in steps]
    assert "Identity" not in types and "IndexMap" not in types, steps
    concats = [e for t, e in steps if t == "Concat"]
    assert len(concats) == 2, steps
    if AVX512 and not ONEDNN_HAS_AMX and precision == "f32":
        # both inputs channels-last (brgconv 1x1, our depthwise kernel): our concatenating copy,
        # no reorder to plain and back
        assert concats == ["concat_nhwc:avx512"] * 2, steps


@pytest.mark.parametrize("precision", PRECISIONS)
def test_slice_that_drops_a_channel_stays(tmp_path: Path, precision: str) -> None:
    # oup 25: the ghost module concatenates 13 + 13 channels and keeps 25, a real Slice
    path = ghost_model(tmp_path / "m.onnx", 24, 25, (10, 11), seed=3, se=False)
    x = np.random.default_rng(3).standard_normal((1, 24, 10, 11)).astype(np.float32)
    steps = check(path, x, precision)
    assert "Identity" not in [t for t, _ in steps]
    # the first module's [:, :25] of 26: a channel slice (an IndexMap with OPFORGE_CPU_CHANNEL_SLICE=0)
    assert {"ChannelSlice", "IndexMap"} & {t for t, _ in steps}, steps


def test_slice_read_by_a_model_output_stays(tmp_path: Path) -> None:
    path = ghost_model(tmp_path / "m.onnx", 16, 16, (8, 8), seed=5, se=False, out_too=True)
    x = np.random.default_rng(5).standard_normal((1, 16, 8, 8)).astype(np.float32)
    steps = check(path, x, "f32")
    assert [t for t, _ in steps].count("Identity") == 1, steps  # the output's; the other goes


def pad_transpose_model(path: Path) -> Path:
    """Conv -> Pad by zero (constant) -> Transpose [0, 1, 2, 3] -> Reshape to its own shape ->
    Conv: three moves that move nothing."""
    g = OnnxGraph(9)
    h = g.relu(g.conv("x", 8, 16, 3))
    h = g.node("Pad", [h, g.const([0] * 8, np.int64), g.const(0.0)], mode="constant")
    h = g.node("Transpose", [h], perm=[0, 1, 2, 3])
    h = g.node("Reshape", [h, g.const([1, 16, 12, 10], np.int64)])
    return g.save(path, (1, 8, 12, 10), [g.conv(h, 16, 8, 3)])


@pytest.mark.parametrize("precision", PRECISIONS)
def test_pad_transpose_reshape_that_move_nothing_go(tmp_path: Path, precision: str) -> None:
    path = pad_transpose_model(tmp_path / "m.onnx")
    x = np.random.default_rng(9).standard_normal((1, 8, 12, 10)).astype(np.float32)
    steps = check(path, x, precision)
    types = [t for t, _ in steps]
    assert not {"Identity", "IndexMap", "Transpose", "Pad", "Reshape"} & set(types), steps
    assert all(t.endswith("Convolution") for t in types if t != "Reorder"), steps


def child(path: Path, x: np.ndarray, tmp: Path, env: dict[str, str], precision: str) -> tuple[list[np.ndarray], str]:
    """The outputs and the executed node types at 2 threads in a child process with ``env``."""
    np.save(tmp / "x.npy", x)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_noop_moves import run; "
            "from pathlib import Path; out, s = run(Path(sys.argv[1]), np.load(sys.argv[2]), 2, sys.argv[4]); "
            "np.save(sys.argv[2] + '.out.npy', out[0]); print(repr([t for t, _ in s]))")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp / "x.npy"), str(Path(__file__).parent),
                          precision], env=dict(os.environ, **env), capture_output=True, text=True, timeout=120,
                         check=True)
    return [np.load(str(tmp / "x.npy") + ".out.npy")], res.stdout


def int8_child(path: Path, x: np.ndarray, tmp: Path, env: dict[str, str]) -> tuple[np.ndarray, list[str]]:
    """The output and the executed node types of QDQ model ``path`` (its own int8 hint-free
    compile) at 2 threads in a child process with ``env``."""
    np.save(tmp / "xq.npy", x)
    code = ("import sys, numpy as np, opforge; c = opforge.Core(); "
            "m = c.compile_model(c.read_model(sys.argv[1]), 'CPU', {'INFERENCE_NUM_THREADS': 2, 'ENABLE_PROFILING': True}); "
            "r = m.create_infer_request(); y = np.asarray(r.infer({0: np.load(sys.argv[2])})[0]); "
            "np.save(sys.argv[2] + '.out.npy', y); "
            "print(repr([p.node_type for p in r.get_profiling_info() if p.status == 'EXECUTED']))")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp / "xq.npy")], env=dict(os.environ, **env),
                         capture_output=True, text=True, timeout=120, check=True)
    return np.load(str(tmp / "xq.npy") + ".out.npy"), ast.literal_eval(res.stdout.strip().splitlines()[-1])


def test_int8_ghost_bottleneck_slices_the_bytes_then_goes(tmp_path: Path) -> None:
    # ONNX Runtime's static QDQ copy: the Slice sits between a Dequantize and a Quantize of one
    # grid; the int8 pass makes it a Slice of the bytes, which this pass then takes out (taken
    # out first, it left a Dequantize -> Quantize pair per ghost module). The same bytes as with
    # the switch off (the move is exact either way), and close to ONNX Runtime's int8 output.
    from int8_testing import quantize

    shape = (1, 24, 14, 15)
    f32 = ghost_model(tmp_path / "f.onnx", 24, 24, shape[2:], seed=31, se=False)
    q = quantize(f32, tmp_path / "q.onnx", shape, per_channel=True, activation="u8")
    x = np.random.default_rng(31).standard_normal(shape).astype(np.float32)
    on, types_on = int8_child(q, x, tmp_path, {})
    off, types_off = int8_child(q, x, tmp_path, {"OPFORGE_CPU_NOOP_MOVES": "0"})
    assert "Identity" not in types_on and "Identity" in types_off, (types_on, types_off)
    # only the model's input is quantized and its output dequantized
    assert types_on.count("Quantize") <= 1 and types_on.count("Dequantize") <= 1, types_on
    np.testing.assert_array_equal(on, off)
    want = ort.InferenceSession(str(q), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert float(np.abs(on - want).max()) <= 0.05 * float(np.abs(want).max())


@pytest.mark.parametrize("precision", PRECISIONS)
def test_switch_off_keeps_the_copy(tmp_path: Path, precision: str) -> None:
    path = ghost_model(tmp_path / "m.onnx", 24, 24, (14, 15), seed=24, se=True)
    x = np.random.default_rng(24).standard_normal((1, 24, 14, 15)).astype(np.float32)
    on, types_on = child(path, x, tmp_path, {}, precision)
    off, types_off = child(path, x, tmp_path, {"OPFORGE_CPU_NOOP_MOVES": "0"}, precision)
    assert "Identity" not in types_on and "Identity" in types_off, (types_on, types_off)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    tol = (3e-2 if precision == "bf16" else 1e-5) * float(np.abs(want).max())
    for got in (on[0], off[0]):
        np.testing.assert_allclose(got, want, rtol=0, atol=tol)


def test_a_tensor_above_the_index_image_cap_keeps_its_move(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """moves_nothing evaluates an int64 index image of the tensor's size at compile time; above
    MAX_INDEX_IMAGE elements it does not (the move stays a step), and the result is the same."""
    from opforge_cpu.passes import noop_moves

    path = pad_transpose_model(tmp_path / "m.onnx")
    x = np.random.default_rng(9).standard_normal((1, 8, 12, 10)).astype(np.float32)
    out, steps = run(path, x, 1, "f32")
    monkeypatch.setattr(noop_moves, "MAX_INDEX_IMAGE", 100)
    capped, capped_steps = run(path, x, 1, "f32")
    assert len(capped_steps) > len(steps), (steps, capped_steps)
    np.testing.assert_allclose(capped[0], out[0], rtol=1e-6, atol=1e-6)
