"""Window attention (Swin): the scores of several windows [W, H, S, S] plus one relative
position bias for all of them [1, H, S, S]. In f32 the bias becomes a binary post-op of the
Q x K^T MatMul only over a single batch; broadcast over the windows oneDNN had nothing but its
reference kernel for it (tv_swin_t 3.6 s instead of ~0.1 at 1 thread), so the Add stays a step
of its own. Values against ONNX Runtime, f32 and bf16, and no reference MatMul kernel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import opforge
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto

HEADS, S, D = 3, 7, 16


def window_attention(path: Path, windows: int) -> Path:
    rng = np.random.default_rng(13)
    bias = numpy_helper.from_array((rng.standard_normal((1, HEADS, S, S)) * 2).astype(np.float32), "bias")
    scale = numpy_helper.from_array(np.array(D ** -0.5, np.float32), "scale")
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s0"]),
             helper.make_node("Mul", ["s0", "scale"], ["s1"]),
             helper.make_node("Add", ["s1", "bias"], ["s2"]),
             helper.make_node("Softmax", ["s2"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    ins = [helper.make_tensor_value_info(n, TP.FLOAT, [windows, HEADS, S, D]) for n in "qkv"]
    graph = helper.make_graph(nodes, "windows", ins, [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                              [bias, scale])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize("windows", [1, 4])
@pytest.mark.parametrize("precision,tol", [("f32", 1e-5), ("bf16", 3e-2)])
def test_position_bias_over_windows(tmp_path: Path, windows: int, precision: str, tol: float) -> None:
    path = window_attention(tmp_path / "win.onnx", windows)
    rng = np.random.default_rng(2)
    feeds = {n: rng.standard_normal((windows, HEADS, S, D)).astype(np.float32) for n in "qkv"}
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    compiled = opforge.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": precision,
                                                               "ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer(feeds)[0])
    err = float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())
    assert err < tol, f"{windows} windows {precision}: {err:.2e} of max|y|"
    matmuls = [r.exec_type for r in req.get_profiling_info() if r.status == "EXECUTED" and r.node_type == "MatMul"]
    assert len(matmuls) == 2 and not any(e.startswith("ref") for e in matmuls), matmuls
