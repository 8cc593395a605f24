"""A MatMul of an A of rank > 2 with constant 2-D weights (ConvNeXt's channels-last MLP,
[1, 7, 7, 768] x [768, 3072]) runs as one [M, K] x [K, N] product over all of A's rows
(core/nn.cpp make_dnnl_matmul), with the fused bias, residual sum and activation of the chain:
values against ONNX Runtime in f32 and bf16, weights stored [K, N] and [1, 1, K, N], A of rank
3 to 5, and the cases that keep A's shape (a run-time B, batched weights)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

pytest.importorskip("opforge_onnx")

K, N = 40, 56


def mlp_block(a_shape: list[int], w_lead: list[int], runtime_b: bool) -> tuple[bytes, dict[str, np.ndarray]]:
    """y = x + Relu(x @ W1 + b1) @ W2 + b2: both MatMuls fused with what follows them."""
    rng = np.random.default_rng(5)
    inits: list[Any] = []
    feeds = {"x": rng.standard_normal(a_shape).astype(np.float32)}

    def init(name: str, a: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(a.astype(np.float32), name))
        return name

    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, a_shape)]
    w1_shape = [*w_lead, K, N]
    if runtime_b:
        inputs.append(helper.make_tensor_value_info("w1", TensorProto.FLOAT, w1_shape))
        feeds["w1"] = (rng.standard_normal(w1_shape) / K ** 0.5).astype(np.float32)
        w1 = "w1"
    else:
        w1 = init("w1", rng.standard_normal(w1_shape) / K ** 0.5)
    nodes = [helper.make_node("MatMul", ["x", w1], ["h0"]),
             helper.make_node("Add", ["h0", init("b1", rng.standard_normal(N))], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]),
             helper.make_node("MatMul", ["h2", init("w2", rng.standard_normal((N, K)) / N ** 0.5)], ["o0"]),
             helper.make_node("Add", [init("b2", rng.standard_normal(K)), "o0"], ["o1"]),
             helper.make_node("Add", ["x", "o1"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString(), feeds


CASES = [([1, 7, 7, K], [], False), ([2, 3, 5, K], [1, 1], False), ([3, 9, K], [], False),
         ([1, 2, 3, 4, K], [1], False), ([2, 3, 5, K], [], True), ([2, 3, 5, K], [1, 3], False)]


@pytest.mark.parametrize("a_shape,w_lead,runtime_b", CASES)
@pytest.mark.parametrize("precision,tol", [("f32", 1e-5), ("bf16", 2e-2)])
def test_matmul_rows_of_every_leading_dimension(a_shape: list[int], w_lead: list[int], runtime_b: bool,
                                               precision: str, tol: float) -> None:
    import opforge

    data, feeds = mlp_block(a_shape, w_lead, runtime_b)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(data), "CPU", {"INFERENCE_PRECISION_HINT": precision})
    req = compiled.create_infer_request()
    for _ in range(2):  # a reused request: the residual sum is written over its operand's buffer
        got = np.asarray(req.infer(feeds)[0])
        assert got.shape == want.shape
        err = float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())
        assert err < tol, f"{a_shape} x {[*w_lead, K, N]} {precision}: {err:.2e} of max|y|"
