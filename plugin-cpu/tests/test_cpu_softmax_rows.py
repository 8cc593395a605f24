"""Softmax over the last axis runs the CPU's hand-written row loops (softmax_rows): values of the
reference and of ONNX Runtime for row lengths around the 16-lane blocks, 1 and 2 threads, in
place after an Add (attention's mask), large and masked (-inf, -1e4) scores, and the NaN/+inf
rule (such a row is NaN throughout, -inf alone is a mask); other axes keep oneDNN's kernel.
The rows run a hand-written AVX-512 build where oneDNN's ISA has AVX-512 and the compiler's
vectorised loops elsewhere: ``test_baseline_builds`` runs the module again under
ONEDNN_MAX_CPU_ISA=AVX2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import check, const, param, rand
from opforge.graph import Model


def softmax_model(shape: tuple[int, ...], axis: int = -1, mask: np.ndarray | None = None) -> Model:
    x = param("x", shape)
    s: Any = x if mask is None else opforge.op("Add", x, const(mask), name="mask")
    return Model([opforge.op("Softmax", s, axis=axis, name="softmax")], [x])


def run(core: opforge.Core, model: Model, x: np.ndarray, threads: int = 1) -> tuple[np.ndarray, list[str]]:
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                                                 "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    y = np.asarray(req.infer([x])[0])
    return y, [r.exec_type for r in req.get_profiling_info() if r.node_type == "Softmax"]


def numpy_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("length", [1, 5, 16, 17, 128, 197])
def test_last_axis_softmax_matches_the_reference(core: opforge.Core, length: int, threads: int) -> None:
    shape = (2, 3, 40, length)  # 240 rows: both threads get some at every length
    x = rand(shape, seed=length, low=-30, high=30)
    check(core, softmax_model(shape), [x], rtol=1e-5, atol=1e-7, config={"INFERENCE_NUM_THREADS": threads})
    y, impls = run(core, softmax_model(shape), x, threads)
    assert impls == ["softmax_rows"]
    np.testing.assert_allclose(y, numpy_softmax(x), rtol=2e-6, atol=1e-9)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-5)


def test_masked_scores_in_place_after_the_mask_add(core: opforge.Core) -> None:
    """GPT-2's causal mask: an additive -1e4 (and -inf) upper triangle; the Add's buffer is reused."""
    seq = 33
    mask = np.triu(np.full((seq, seq), -1e4, np.float32), 1)
    mask[0, 1:] = -np.inf
    x = rand((1, 4, seq, seq), seed=2, low=-8, high=8)
    y, impls = run(core, softmax_model((1, 4, seq, seq), mask=mask), x, threads=2)
    assert impls == ["softmax_rows"]
    np.testing.assert_allclose(y, numpy_softmax(x + mask), rtol=2e-6, atol=1e-9)
    assert np.all(y[..., 0, 1:] == 0.0) and np.all(y[..., 0, 0] == 1.0)


def test_nan_and_inf_rows(core: opforge.Core) -> None:
    x = rand((6, 40), seed=3)
    x[1, 7] = np.nan          # NaN anywhere: the row is NaN
    x[2, 39] = np.inf         # +inf: inf - inf
    x[3, :] = -np.inf         # all -inf: -inf - -inf is NaN, as the reference computes
    x[4, 0:39] = -np.inf      # one finite entry: it takes everything
    x[5, 20] = 3e38           # huge finite values stay finite
    y, impls = run(core, softmax_model((6, 40)), x)
    assert impls == ["softmax_rows"]
    assert np.all(np.isnan(y[1])) and np.all(np.isnan(y[2])) and np.all(np.isnan(y[3]))
    np.testing.assert_array_equal(y[4], np.eye(40, dtype=np.float32)[39])
    np.testing.assert_allclose(y[0], numpy_softmax(x[0]), rtol=2e-6, atol=1e-9)
    assert y[5, 20] == 1.0 and np.all(y[5, :20] == 0.0)


def test_other_axes_keep_onednn(core: opforge.Core) -> None:
    x = rand((3, 17, 5), seed=4)
    y, impls = run(core, softmax_model((3, 17, 5), axis=1), x)
    assert impls and impls[0] != "softmax_rows"
    np.testing.assert_allclose(y, numpy_softmax(x, axis=1), rtol=2e-6, atol=1e-9)


def test_scores_match_onnxruntime(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    shape = [1, 6, 128, 128]
    graph = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "softmax",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "softmax.onnx"
    onnx.save(model, path)
    x = rand(shape, seed=5, low=-12, high=12)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = opforge.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})([x]).to_tuple()[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-8)


def test_baseline_builds() -> None:
    """The tests above on the rows' non-AVX-512 build (an AVX2 host, emulated)."""
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    done = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-x", "-p", "no:randomly", "-p",
                           "no:cacheprovider", "-k", "not baseline_builds"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
