"""MVN rows on our kernel (kernels/mvn.cpp MvnKernel): mean and variance in one pass over blocks
of 4096 (the sums of x - s and (x - s)^2, s the row's first finite element; stop 26), and a
row's blocks shared among the threads when there are fewer rows than threads (stop 25:
PoolFormer's GroupNorm(1 group), exported as InstanceNormalization of one channel of 25k-200k
values, ran each on one thread, 10x OpenVINO's time). Results against ONNX Runtime, and
bit-identical at 1 and 2 threads (the blocks' sums are added in block order whichever thread
computed them)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import opforge
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)


def instance_norm(path: Path, shape: tuple[int, ...], seed: int, offset: float) -> Path:
    """x + offset -> InstanceNormalization (per-channel scale and bias) -> Relu."""
    g = OnnxGraph(seed)
    c = shape[1]
    h = g.node("Add", ["x", g.const(offset)])  # a large mean: the variance's two passes matter
    h = g.node("InstanceNormalization", [h, g.const(g.rng.standard_normal(c)), g.const(g.rng.standard_normal(c))],
               epsilon=1e-5)
    return g.save(path, shape, [g.node("Relu", [h])])


def run(path: Path, x: np.ndarray, threads: int) -> tuple[np.ndarray, list[str]]:
    core = opforge.Core()
    cm = core.compile_model(core.read_model(str(path)), "CPU",
                            {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                             "INFERENCE_PRECISION_HINT": "f32"})
    req = cm.create_infer_request()
    out = np.array(req.infer({"x": x})[0])
    return out, [p.exec_type for p in req.get_profiling_info() if p.node_type == "MVN"]


@pytest.mark.parametrize("shape", [(1, 1, 200704), (1, 1, 4096 * 3 + 5), (1, 1, 4095), (1, 2, 50000), (2, 3, 9000)],
                         ids=str)
@pytest.mark.parametrize("offset", [0.0, 1000.0])
def test_long_rows_match_onnxruntime(tmp_path: Path, shape: tuple[int, ...], offset: float) -> None:
    path = instance_norm(tmp_path / "m.onnx", shape, seed=shape[-1] % 97, offset=offset)
    x = np.random.default_rng(shape[-1]).standard_normal(shape).astype(np.float32) * 2
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    one, kinds = run(path, x, 1)
    two, _ = run(path, x, 2)
    if shape[0] * shape[1] == 1:  # one channel: its scalar scale is not oneDNN's per-column one, ours runs
        assert kinds and not any("jit" in k for k in kinds), kinds
    np.testing.assert_array_equal(one, two)
    # ONNX Runtime sums in f32; x + 1000 is itself rounded to 6e-5 in f32, and each engine's
    # x - mean carries that (over a standard deviation of 2: up to ~2e-4 apart, either engine)
    tol = 1e-4 if offset == 0.0 else 5e-4
    np.testing.assert_allclose(one, ref, rtol=tol, atol=tol)


def test_nan_in_a_long_row_spreads_as_in_onnxruntime(tmp_path: Path) -> None:
    shape = (1, 1, 20000)
    path = instance_norm(tmp_path / "m.onnx", shape, seed=1, offset=0.0)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    x[0, 0, 12345] = np.nan
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        out, _ = run(path, x, threads)
        np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))


@pytest.mark.parametrize("first", [np.inf, -np.inf, np.nan], ids=str)
def test_a_non_finite_first_element_spreads_as_in_onnxruntime(tmp_path: Path, first: float) -> None:
    """The one-pass variance shifts each row by its first element; a non-finite one must not
    become the shift (x - inf would be -inf everywhere), and must still reach the statistics."""
    shape = (1, 2, 9000)
    path = instance_norm(tmp_path / "m.onnx", shape, seed=2, offset=0.0)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    x[0, 0, 0] = first
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        out, _ = run(path, x, threads)
        np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
        np.testing.assert_allclose(out[0, 1], ref[0, 1], rtol=1e-4, atol=1e-4)  # the finite channel


@pytest.mark.parametrize("value", [0.0, 3.25, -1e4], ids=str)
def test_a_constant_row_normalises_to_the_shift_exactly(tmp_path: Path, value: float) -> None:
    """A constant row has variance 0: rounding in E[(x-s)^2] - E[x-s]^2 must not make it negative
    (the square root of it would be NaN). The output is then the channel's bias (Relu'd) exactly."""
    shape = (1, 1, 4096 * 2 + 7)
    path = instance_norm(tmp_path / "m.onnx", shape, seed=3, offset=0.0)
    x = np.full(shape, value, np.float32)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        out, _ = run(path, x, threads)
        assert not np.isnan(out).any()
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
