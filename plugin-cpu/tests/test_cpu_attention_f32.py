"""f32 attention on CPU: the head-split Transposes (K's two merged into one) are read through the
MatMuls' strides, the Q x K^T scale and the mask / position bias are post-ops of the MatMul, and
the head merge is written through the P x V MatMul's destination strides (emit.py, as in bf16),
with the values of ONNX Runtime and of the reference, at 1 and 2 threads, and no oneDNN
reference kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge.reference import evaluate_model

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto

SEQ, HEADS, DH = 24, 3, 16
DIM = HEADS * DH


def attention_model(path: Path, mask: str, batch: int = 1, scale: str = "div") -> Path:
    """x [B, S, DIM] -> multi-head self-attention -> [B, S, DIM]; ``mask`` names the additive
    term after the scale: none, row (a run-time [B, 1, 1, S] from a 0/1 input), causal
    ([1, 1, S, S] constant), bias ([1, H, S, S] constant), batch ([B, 1, S, S] constant)."""
    rng = np.random.default_rng(7)
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, v: Any, dtype: Any = np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(v, dtype), name))
        return name

    def node(op: str, ins: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    inputs = [helper.make_tensor_value_info("x", TP.FLOAT, [batch, SEQ, DIM])]
    if mask == "row":  # BERT's: computed first, from the model input (the MatMul's step must come after it)
        inputs.append(helper.make_tensor_value_info("keep", TP.FLOAT, [batch, SEQ]))
        m = node("Unsqueeze", ["keep", const("ax", [1, 2], np.int64)], "keep4")
        row_mask = node("Mul", [node("Sub", [const("one", 1.0), m], "drop"), const("neg", -1e4)], "row_mask")
    split = const("split", [batch, SEQ, HEADS, DH], np.int64)
    heads = {}
    for t in "qkv":
        p = node("MatMul", ["x", const(f"w{t}", rng.standard_normal((DIM, DIM)) / DIM**0.5)], f"{t}_proj")
        heads[t] = node("Transpose", [node("Reshape", [p, split], f"{t}_4d")], f"{t}_h", perm=[0, 2, 1, 3])
    kt = node("Transpose", [heads["k"]], "k_t", perm=[0, 1, 3, 2])
    s = node("MatMul", [heads["q"], kt], "scores")
    if scale == "div":
        s = node("Div", [s, const("sqrt_d", DH**0.5)], "scaled")
    else:
        s = node("Mul", [const("inv_sqrt_d", DH**-0.5), s], "scaled")
    if mask == "row":
        s = node("Add", [s, row_mask], "masked")
    elif mask == "causal":
        s = node("Add", [s, const("causal", np.triu(np.full((SEQ, SEQ), -1e4), 1)[None, None])], "masked")
    elif mask == "bias":
        s = node("Add", [const("pos_bias", rng.standard_normal((1, HEADS, SEQ, SEQ))), s], "masked")
    elif mask == "batch":
        s = node("Add", [s, const("per_batch", rng.standard_normal((batch, 1, SEQ, SEQ)))], "masked")
    ctx = node("MatMul", [node("Softmax", [s], "probs", axis=-1), heads["v"]], "ctx")
    merged = node("Reshape", [node("Transpose", [ctx], "ctx_t", perm=[0, 2, 1, 3]),
                              const("merge", [batch, SEQ, DIM], np.int64)], "merged")
    y = node("MatMul", [merged, const("wo", rng.standard_normal((DIM, DIM)) / DIM**0.5)], "y")
    graph = helper.make_graph(nodes, "attention", inputs, [helper.make_tensor_value_info(y, TP.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def feeds(mask: str, batch: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    f = {"x": rng.standard_normal((batch, SEQ, DIM)).astype(np.float32)}
    if mask == "row":
        keep = np.ones((batch, SEQ), np.float32)
        keep[:, SEQ - 5:] = 0.0
        f["keep"] = keep
    return f


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("mask", "batch", "scale"), [("none", 1, "div"), ("row", 1, "mul"), ("row", 2, "div"),
                                                      ("causal", 1, "div"), ("bias", 1, "mul"), ("batch", 2, "div")])
def test_f32_attention_fuses_around_its_matmuls(tmp_path: Path, mask: str, batch: int, scale: str,
                                                threads: int) -> None:
    path = attention_model(tmp_path / "attention.onnx", mask, batch, scale)
    f = feeds(mask, batch)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, f)[0]
    core = opforge.Core()
    model = core.read_model(str(path))
    (ref,) = evaluate_model(model, list(f.values()))
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                                                 "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer(f)[0])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=2e-5)
    rows = [r for r in req.get_profiling_info() if r.status == "EXECUTED"]
    ran = [r.node_type for r in rows]
    # K's two Transposes merge (core's MergeTransposes) into one read through Q x K^T's strides
    assert "Transpose" not in ran, ran
    assert "Divide" not in ran and "Multiply" not in ran[ran.index("Softmax") - 1:], ran
    # a mask that varies over a batch of more than one stays an Add; constant ones are post-ops
    # (a computed one only when its step comes before the MatMul's, as BERT's does)
    if mask != "row" or batch > 1:
        assert ("Add" in ran) == (mask != "none" and batch > 1), ran
    matmuls = [r.exec_type for r in rows if r.node_type == "MatMul"]
    assert len(matmuls) == 6 and not any(e.startswith("ref") for e in matmuls), matmuls
