"""A BatchNormalization on a MatMul's output columns folds into the MatMul (core's
fold_batch_norm pass, stop 26): LeViT's ``Linear`` + ``BatchNorm1d`` as ``MatMul`` [-> Flatten /
Reshape to [tokens, C]] -> ``BatchNormalization`` [-> Reshape back]. The MatMul gets W * scale
and the shift as its bias; no BatchNormInference step is left. Checked against ONNX Runtime
(within 1e-5 of the output's largest value: the scaled weights round once more than W alone), in
f32 at 1 and 2 threads, and in bf16 (within bf16's own tolerance of the f32 result); with the
switch ``OPFORGE_CPU_BN_MATMUL_FOLD=0`` the BN stays a step. Near-misses stay unfolded: the
MatMul read by someone else, a Reshape that changes the last axis, a BN over a 3-D tensor (its
channels are axis 1, not the MatMul's columns)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import opforge
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

TOKENS, K, N = 49, 64, 96


def _bn(g: OnnxGraph, h: str, c: int) -> str:
    gamma, beta = g.rng.uniform(0.2, 1.5, c), g.rng.standard_normal(c) * 0.1
    mean, var = g.rng.standard_normal(c) * 0.2, g.rng.uniform(0.1, 2.0, c)
    return g.node("BatchNormalization", [h, g.const(gamma), g.const(beta), g.const(mean), g.const(var)], epsilon=1e-5)


def levit_linear(path: Path, flatten: str, trans_b: bool, seed: int) -> Path:
    """x [1, TOKENS, K] -> Linear (MatMul, or Gemm with transB on the flattened tokens) ->
    BatchNorm1d on [TOKENS, N] -> back to [1, TOKENS, N] -> Relu."""
    g = OnnxGraph(seed)
    w = g.rng.standard_normal((K, N)) / K ** 0.5
    if trans_b:  # Gemm(x2d, W^T, transB=1): the converter's MatMul(transpose_b=True)
        x2 = g.node("Reshape", ["x", g.const([TOKENS, K], np.int64)])
        h = g.node("Gemm", [x2, g.const(w.T)], transB=1)
    else:
        h = g.node("MatMul", ["x", g.const(w)])
        h = (g.node("Flatten", [h], axis=2) if flatten == "flatten"
             else g.node("Reshape", [h, g.const([-1, N], np.int64)]))
    h = _bn(g, h, N)
    h = g.node("Reshape", [h, g.const([1, TOKENS, N], np.int64)])
    return g.save(path, (1, TOKENS, K), [g.relu(h)])


def run(path: Path, x: np.ndarray, threads: int, precision: str = "f32") -> tuple[np.ndarray, list[str]]:
    core = opforge.Core()
    cm = core.compile_model(core.read_model(str(path)), "CPU",
                            {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                             "INFERENCE_PRECISION_HINT": precision})
    req = cm.create_infer_request()
    out = np.array(req.infer({"x": x})[0])
    return out, [p.node_type for p in req.get_profiling_info() if p.exec_type != "fused"]


def reference(path: Path, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


@pytest.mark.parametrize(("flatten", "trans_b"), [("flatten", False), ("reshape", False), ("gemm", True)])
def test_folded_matches_onnxruntime(tmp_path: Path, flatten: str, trans_b: bool) -> None:
    path = levit_linear(tmp_path / "m.onnx", flatten, trans_b, seed=26)
    x = np.random.default_rng(7).standard_normal((1, TOKENS, K)).astype(np.float32)
    ref = reference(path, x)
    top = float(np.abs(ref).max())
    outs = []
    for threads in (1, 2):
        out, types = run(path, x, threads)
        assert "BatchNormInference" not in types, types
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5 * top)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    out, types = run(path, x, 1, "bf16")
    assert "BatchNormInference" not in types, types
    np.testing.assert_allclose(out, ref, rtol=0, atol=3e-2 * top)


def test_switch_off_keeps_the_batch_norm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPFORGE_CPU_BN_MATMUL_FOLD", "0")
    path = levit_linear(tmp_path / "m.onnx", "flatten", False, seed=3)
    x = np.random.default_rng(3).standard_normal((1, TOKENS, K)).astype(np.float32)
    out, types = run(path, x, 1)
    assert "BatchNormInference" in types, types
    np.testing.assert_allclose(out, reference(path, x), rtol=1e-5, atol=1e-5)


def _near_miss(path: Path, kind: str) -> Path:
    g = OnnxGraph(5)
    mm = g.node("MatMul", ["x", g.const(g.rng.standard_normal((K, N)) / K ** 0.5)])
    outs = []
    if kind == "shared":  # the MatMul's result is also an output: W cannot change
        h = _bn(g, g.node("Flatten", [mm], axis=2), N)
        outs.append(mm)
    elif kind == "last_axis":  # [1, 49, 96] -> [98, 48]: BN channels are not the MatMul's columns
        h = _bn(g, g.node("Reshape", [mm, g.const([-1, N // 2], np.int64)]), N // 2)
    else:  # "3d": BN over [1, 49, 96] normalises axis 1 (the tokens)
        h = _bn(g, mm, TOKENS)
    return g.save(path, (1, TOKENS, K), [h, *outs])


@pytest.mark.parametrize("kind", ["shared", "last_axis", "3d"])
def test_near_misses_keep_the_batch_norm(tmp_path: Path, kind: str) -> None:
    path = _near_miss(tmp_path / "m.onnx", kind)
    x = np.random.default_rng(5).standard_normal((1, TOKENS, K)).astype(np.float32)
    out, types = run(path, x, 1)
    assert "BatchNormInference" in types, types
    np.testing.assert_allclose(out, reference(path, x), rtol=1e-5, atol=1e-5)
