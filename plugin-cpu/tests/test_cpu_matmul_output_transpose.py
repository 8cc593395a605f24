"""A Transpose after a MatMul of two run-time operands is written through the MatMul's
destination strides (emit.py ``_output_transpose``) only when the result's last axis stays
innermost: attention's head merge ([B, H, S, D] -> [B, S, H, D]) is folded; EdgeNeXt's
cross-covariance attention ([B, H, D, N] -> [B, N, H, D], timm's XCA) is not, since oneDNN has
only its reference kernel for a destination whose rows are strided (59 ms for one of
edgenext_x_small's products, the whole model 4.8x OpenVINO). Values against ONNX Runtime, f32 and
bf16, and no oneDNN reference kernel in either case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import opforge
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto

HEADS, D, N = 4, 16, 96


def product_then_transpose(path: Path, perm: list[int]) -> Path:
    """softmax(q k^T) v for q, k, v [1, H, D, N] (XCA's channel attention: D x D scores), then
    the Transpose ``perm`` of the [1, H, D, N] result."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["o"]),
             helper.make_node("Transpose", ["o"], ["y"], perm=perm)]
    ins = [helper.make_tensor_value_info(n, TP.FLOAT, [1, HEADS, D, N]) for n in "qkv"]
    graph = helper.make_graph(nodes, "xca", ins, [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize("precision,tol", [("f32", 1e-5), ("bf16", 3e-2)])
@pytest.mark.parametrize("perm,folded", [([0, 3, 1, 2], False), ([0, 2, 1, 3], True), ([2, 0, 1, 3], True)])
def test_output_transpose_is_folded_only_with_dense_rows(tmp_path: Path, precision: str, tol: float,
                                                         perm: list[int], folded: bool) -> None:
    path = product_then_transpose(tmp_path / "xca.onnx", perm)
    rng = np.random.default_rng(11)
    feeds = {n: rng.standard_normal((1, HEADS, D, N)).astype(np.float32) for n in "qkv"}
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    compiled = opforge.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": precision,
                                                               "ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer(feeds)[0])
    assert got.shape == want.shape
    err = float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())
    assert err < tol, f"perm {perm} {precision}: {err:.2e} of max|y|"
    rows = [r for r in req.get_profiling_info() if r.status == "EXECUTED"]
    matmuls = [r.exec_type for r in rows if r.node_type == "MatMul"]
    assert len(matmuls) == 2 and not any(e.startswith("ref") for e in matmuls), matmuls
    assert any(r.node_type == "Transpose" for r in rows) != folded, [(r.node_type, r.exec_type) for r in rows]
