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


@pytest.mark.parametrize("precision", ["f32", "bf16"])
@pytest.mark.parametrize("shape", [(1, 1, 3, 4), (2, 3, 5, 4)])
def test_a_transpose_between_two_matmuls_is_written_by_one_and_read_by_the_other(
        tmp_path: Path, precision: str, shape: tuple[int, ...]) -> None:
    """x -> Transpose -> MatMul(w1) -> Transpose -> MatMul(w2), all operands run-time (the ONNX
    frontend's Resize by matrices on two axes has this shape). The middle Transpose can be the
    head merge of the first MatMul or the head split of the second, not both: taking it as both
    left the second reading a tensor nobody wrote (a segfault)."""
    b, c, h, w = shape
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["xt", "w1"], ["m1"]),
             helper.make_node("Transpose", ["m1"], ["m1t"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["m1t", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "chain", [
        helper.make_tensor_value_info("x", TP.FLOAT, [b, c, h, w]),
        helper.make_tensor_value_info("w1", TP.FLOAT, [h, 5]),
        helper.make_tensor_value_info("w2", TP.FLOAT, [w, 6])], [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    path = tmp_path / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    rng = np.random.default_rng(3)
    feeds = [rng.standard_normal(s).astype(np.float32) for s in ([b, c, h, w], [h, 5], [w, 6])]
    compiled = opforge.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": precision})
    got = compiled.create_infer_request().infer(feeds)[0]
    x, w1, w2 = (a.astype(np.float64) for a in feeds)
    want = np.swapaxes(np.swapaxes(x, 2, 3) @ w1, 2, 3) @ w2
    tol = 1e-5 if precision == "f32" else 3e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * float(np.max(np.abs(want))))
