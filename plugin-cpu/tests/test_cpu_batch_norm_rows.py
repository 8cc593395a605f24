"""A BatchNormalization on a plain [N, C] tensor (every axis after the channels of size 1:
LeViT's BatchNorm1d after each Linear, flattened to [B * tokens, C]) runs the channels-innermost
scale-shift kernel (exec type ``scale_shift:rows``) instead of the per-element loop, which took
a square root in double per element (stop 25: LeViT-128S's 48 of them 2.74 -> 0.08 ms).
Results against ONNX Runtime, at 1 and 2 threads, with NaN and infinities kept; a fused ReLU;
[N, C, 1, 1]; a tensor with spatial axes keeps the general kernel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import opforge
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)


@pytest.fixture(autouse=True)
def _no_mat_mul_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 2-D models put a MatMul in front of the BN, which the planning pass folds into the
    MatMul since stop 26 (test_cpu_bn_matmul_fold.py): off here, so the kernel runs."""
    monkeypatch.setenv("OPFORGE_CPU_BN_MATMUL_FOLD", "0")


def bn_model(path: Path, shape: tuple[int, ...], relu: bool, seed: int) -> Path:
    """x -> MatMul (so the BN is not the graph's first node) -> BatchNormalization [-> Relu]."""
    g = OnnxGraph(seed)
    c = shape[1]
    h = "x"
    if len(shape) == 2:
        h = g.node("MatMul", [h, g.const(g.rng.standard_normal((c, c)) / c ** 0.5)])
    gamma, beta = g.rng.standard_normal(c), g.rng.standard_normal(c) * 0.1
    mean, var = g.rng.standard_normal(c) * 0.2, g.rng.uniform(0.1, 2.0, c)
    var[0] = 0.0  # eps alone under the root
    h = g.node("BatchNormalization", [h, g.const(gamma), g.const(beta), g.const(mean), g.const(var)], epsilon=1e-3)
    if relu:
        h = g.node("Relu", [h])
    return g.save(path, shape, [h])


def run(path: Path, x: np.ndarray, threads: int) -> tuple[np.ndarray, list[str]]:
    core = opforge.Core()
    cm = core.compile_model(core.read_model(str(path)), "CPU",
                            {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                             "INFERENCE_PRECISION_HINT": "f32"})
    req = cm.create_infer_request()
    out = np.array(req.infer({"x": x})[0])
    # (a fused ReLU has its own row, exec type "fused")
    kinds = [p.exec_type for p in req.get_profiling_info()
             if p.node_type == "BatchNormInference" and p.exec_type != "fused"]
    return out, kinds


def reference(path: Path, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


@pytest.mark.parametrize("shape", [(196, 128), (3, 17), (1, 384), (5, 40, 1, 1)], ids=str)
@pytest.mark.parametrize("relu", [False, True])
def test_rows_batch_norm_matches_onnxruntime(tmp_path: Path, shape: tuple[int, ...], relu: bool) -> None:
    path = bn_model(tmp_path / "m.onnx", shape, relu, seed=shape[1])
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32) * 3
    if len(shape) == 4:  # no MatMul in front: the specials reach the BN as they are
        x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    ref = reference(path, x)
    outs = []
    for threads in (1, 2):
        out, kinds = run(path, x, threads)
        assert kinds and all(k.startswith("scale_shift") and k.endswith(":rows") for k in kinds), kinds
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * max(1.0, float(np.nanmax(np.abs(ref[np.isfinite(ref)])))))
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_spatial_batch_norm_keeps_the_general_kernel(tmp_path: Path) -> None:
    """[N, C, L] with L > 1: the channels are not innermost, the rows kernel does not apply."""
    path = bn_model(tmp_path / "m.onnx", (2, 8, 5), False, seed=3)
    x = np.random.default_rng(3).standard_normal((2, 8, 5)).astype(np.float32)
    out, kinds = run(path, x, 1)
    assert kinds and not any(k.endswith(":rows") for k in kinds), kinds
    np.testing.assert_allclose(out, reference(path, x), rtol=1e-5, atol=1e-5)
