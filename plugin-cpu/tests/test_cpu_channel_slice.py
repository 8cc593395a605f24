"""A constant Slice of consecutive channels of a 4-D tensor runs ChannelSlice
(kernels/channel_slice.cpp, emit.py ``channel_slice_begin``) instead of an IndexMap gather.

RexNet's partial-channel residual, ``Concat(Slice(x, :C) + s, Slice(x, C:))`` on a 1x1
convolution's channels-last output, reordered x to plain for each Slice (an IndexMap reads plain
data), and its Add and Concat then ran on plain tensors. ChannelSlice copies each pixel's channels
in the channels-last layout (exec type ``channel_slice:nhwc``), a plain source one run per image
(``channel_slice``). onnx.helper RexNet-like blocks (seeded weights) in f32/bf16 against ONNX
Runtime, 1 vs 2 threads bit-identical, no Reorder step left; a plain model input sliced; a slice
that is a model output; a Slice of rows stays an IndexMap; the QDQ copy (a Slice of the bytes)
gives the same bytes with OPFORGE_CPU_CHANNEL_SLICE=0 (the IndexMap)."""

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
from cpu_testing import ONEDNN_HAS_AMX  # noqa: E402
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

AVX512 = str(load_core().cpu_isa()).startswith("avx512_core")
PRECISIONS = ["f32", pytest.param("bf16", marks=pytest.mark.skipif(
    not bool(load_core().native_bf16()), reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)"))]


def ch_slice(g: OnnxGraph, x: str, begin: int, end: int, axis: int = 1) -> str:
    return g.node("Slice", [x, g.const([begin], np.int64), g.const([end], np.int64), g.const([axis], np.int64)])


def rexnet_block(path: Path, cin: int, mid: int, cout: int, size: tuple[int, int], seed: int,
                 slice_output: bool = False) -> Path:
    """x -> 1x1 (cin -> cin) = r (the previous block's output) -> 1x1 (cin -> mid) + ReLU -> 1x1
    (mid -> cout) = y; Concat(y[:, :cin] + r, y[:, cin:]) -> 1x1 (cout -> 8); ``slice_output``:
    y[:, cin:] is a model output too."""
    g = OnnxGraph(seed)
    r = g.conv("x", cin, cin, 1)
    y = g.conv(g.relu(g.conv(r, cin, mid, 1)), mid, cout, 1)
    rest = ch_slice(g, y, cin, cout)
    cat = g.node("Concat", [g.node("Add", [ch_slice(g, y, 0, cin), r]), rest], axis=1)
    return g.save(path, (1, cin, *size), [g.conv(cat, cout, 8, 1)] + ([rest] if slice_output else []))


def run(path: Path, x: np.ndarray, threads: int, precision: str,
        config: dict[str, object] | None = None) -> tuple[list[np.ndarray], list[tuple[str, str]]]:
    core = opforge.Core()
    cfg: dict[str, object] = {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True}
    if precision:
        cfg["INFERENCE_PRECISION_HINT"] = precision
    cm = core.compile_model(core.read_model(str(path)), "CPU", cfg | (config or {}))
    req = cm.create_infer_request()
    got = [np.array(o) for o in req.infer({0: x}).to_tuple()]
    req.infer({0: x * 0.5})
    for a, b in zip(req.infer({0: x}).to_tuple(), got, strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)
    return got, [(p.node_type, p.exec_type) for p in req.get_profiling_info() if p.status == "EXECUTED"]


def check(path: Path, x: np.ndarray, precision: str) -> list[tuple[str, str]]:
    one, _ = run(path, x, 1, precision)
    two, steps = run(path, x, 2, precision)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = sess.run(None, {sess.get_inputs()[0].name: x})
    tol = 3e-2 if precision == "bf16" else 1e-5
    for a, b, w in zip(one, two, want, strict=True):
        np.testing.assert_array_equal(b, a)
        np.testing.assert_allclose(a, w, rtol=0, atol=tol * max(float(np.abs(w).max()), 1e-6))
    return steps


#: (a slice of one channel is also the plain layout, [N, 1, H, W]: the Concat then joins mixed
#: layouts, on its plain path; RexNet's rests are 11-57 channels)
CASES = [(16, 96, 27, (28, 26)), (27, 162, 38, (14, 14)), (61, 366, 72, (7, 9)), (8, 16, 10, (5, 3))]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[2]}")
def test_partial_residual_stays_channels_last(tmp_path: Path, precision: str,
                                             case: tuple[int, int, int, tuple[int, int]]) -> None:
    cin, mid, cout, size = case
    path = rexnet_block(tmp_path / "m.onnx", cin, mid, cout, size, seed=cout)
    x = np.random.default_rng(cout).standard_normal((1, cin, *size)).astype(np.float32)
    steps = check(path, x, precision)
    kinds = [e for t, e in steps if t == "ChannelSlice"]
    assert len(kinds) == 2 and "IndexMap" not in [t for t, _ in steps], steps
    if AVX512 and not ONEDNN_HAS_AMX and precision == "f32":
        # the 1x1 convolution writes nhwc: both slices copy in it, the Concat joins nhwc tensors,
        # and the only reorder left is the model output's (the last convolution's nhwc to plain)
        assert kinds == ["channel_slice:nhwc"] * 2, steps
        assert [e for t, e in steps if t == "Concat"] == ["concat_nhwc:avx512"], steps
        assert [t for t, _ in steps].count("Reorder") == 1, steps


def test_slice_as_model_output(tmp_path: Path) -> None:
    path = rexnet_block(tmp_path / "m.onnx", 16, 32, 24, (6, 7), seed=2, slice_output=True)
    x = np.random.default_rng(2).standard_normal((1, 16, 6, 7)).astype(np.float32)
    check(path, x, "f32")


def test_plain_input_and_row_slice(tmp_path: Path) -> None:
    # the model input (plain) sliced by channels: one run per image (two images); a Slice of
    # rows is no channel slice and stays an IndexMap
    g = OnnxGraph(3)
    a = g.conv(ch_slice(g, "x", 3, 9), 6, 8, 3)
    b = g.conv(ch_slice(g, "x", 1, 5, axis=2), 12, 8, 1)
    path = g.save(tmp_path / "m.onnx", (2, 12, 7, 6), [a, b])
    x = np.random.default_rng(3).standard_normal((2, 12, 7, 6)).astype(np.float32)
    steps = check(path, x, "f32")
    assert ("ChannelSlice", "channel_slice") in steps and "IndexMap" in [t for t, _ in steps], steps


def child(path: Path, x: np.ndarray, tmp: Path, env: dict[str, str], precision: str) -> tuple[np.ndarray, list[str]]:
    np.save(tmp / "x.npy", x)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_channel_slice import run; "
            "from pathlib import Path; out, s = run(Path(sys.argv[1]), np.load(sys.argv[2]), 2, sys.argv[4]); "
            "np.save(sys.argv[2] + '.out.npy', out[0]); print(repr([t for t, _ in s]))")
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp / "x.npy"), str(Path(__file__).parent),
                          precision], env=dict(os.environ, **env), capture_output=True, text=True, timeout=120,
                         check=True)
    return np.load(str(tmp / "x.npy") + ".out.npy"), ast.literal_eval(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("precision", PRECISIONS)
def test_switch_off_same_bytes(tmp_path: Path, precision: str) -> None:
    # the slices copy elements: the same bytes as the IndexMap gathers (the layouts around them
    # change, but each convolution computes the same sums)
    path = rexnet_block(tmp_path / "m.onnx", 27, 162, 38, (14, 14), seed=5)
    x = np.random.default_rng(5).standard_normal((1, 27, 14, 14)).astype(np.float32)
    on, types_on = child(path, x, tmp_path, {}, precision)
    off, types_off = child(path, x, tmp_path, {"OPFORGE_CPU_CHANNEL_SLICE": "0"}, precision)
    assert "ChannelSlice" in types_on and "ChannelSlice" not in types_off and "IndexMap" in types_off
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    tol = (3e-2 if precision == "bf16" else 1e-5) * float(np.abs(want).max())
    for got in (on, off):
        np.testing.assert_allclose(got, want, rtol=0, atol=tol)


def test_int8_slices_the_bytes(tmp_path: Path) -> None:
    # ONNX Runtime's static QDQ copy: the int8 pass makes each Slice a Slice of the u8 bytes,
    # which runs ChannelSlice on the quantized convolution's output: exactly the IndexMap's bytes
    from int8_testing import quantize

    shape = (1, 27, 14, 14)
    q = quantize(rexnet_block(tmp_path / "f.onnx", 27, 162, 38, shape[2:], seed=6), tmp_path / "q.onnx", shape,
                 per_channel=True, activation="u8")
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    on, types_on = child(q, x, tmp_path, {}, "")
    off, types_off = child(q, x, tmp_path, {"OPFORGE_CPU_CHANNEL_SLICE": "0"}, "")
    assert types_on.count("ChannelSlice") == 2 and "ChannelSlice" not in types_off, (types_on, types_off)
    np.testing.assert_array_equal(on, off)
