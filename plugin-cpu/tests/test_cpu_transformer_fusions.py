"""The decomposed RMS norm (T5) and tanh GELU (GPT-2's gelu_new) of an exported ONNX transformer
block run on CPU as RMSNormalization and as the MatMul's Gelu(TANH) post-op (core's
FuseRMSNormalization and FuseGeluTanh, CPU planning passes), with the values of ONNX Runtime and
of the reference, at 1 and 2 threads and in bf16."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge.reference import evaluate_model
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, numpy_helper = onnx.helper, onnx.numpy_helper

SEQ, DIM, FF = 24, 32, 64


class Graph:
    """onnx.helper nodes and seeded initializers."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(11)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def const(self, v: Any) -> str:
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(v, np.float32), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        out = f"t{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def weight(self, cin: int, cout: int) -> str:
        return self.const(self.rng.standard_normal((cin, cout)) / cin**0.5)

    def rms_norm(self, x: str, form: str) -> str:
        var = self.op("ReduceMean", [self.op("Pow", [x, self.const(2.0)])], axes=[-1], keepdims=1)
        add = self.op("Add", [var, self.const(1e-6)])
        if form == "t5":  # hidden / sqrt(var + eps) * weight
            h = self.op("Div", [x, self.op("Sqrt", [add])])
            return self.op("Mul", [h, self.const(self.rng.uniform(0.5, 1.5, DIM))])
        # torch.rsqrt: Sqrt + Reciprocal, weight first
        h = self.op("Mul", [x, self.op("Reciprocal", [self.op("Sqrt", [add])])])
        return self.op("Mul", [self.const(self.rng.uniform(0.5, 1.5, DIM)), h])

    def gelu_tanh(self, x: str, form: str) -> str:
        if form == "pow":  # HF gelu_new
            cube = self.op("Pow", [x, self.const(3.0)])
        else:  # torch.onnx GELU(approximate="tanh") before opset 20
            cube = self.op("Mul", [x, self.op("Mul", [x, x])])
        inner = self.op("Add", [x, self.op("Mul", [self.const(0.044715), cube])])
        t = self.op("Tanh", [self.op("Mul", [self.const((2 / np.pi) ** 0.5), inner])])
        one_plus = self.op("Add", [t, self.const(1.0)])
        if form == "pow":
            return self.op("Mul", [self.op("Mul", [self.const(0.5), x]), one_plus])
        return self.op("Mul", [self.const(0.5), self.op("Mul", [x, one_plus])])


def block(path: Path, rms_form: str, gelu_form: str) -> Path:
    """x + W2 gelu_tanh(W1 rms(x) + b1), then a final RMS norm."""
    g = Graph()
    h = g.op("MatMul", [g.rms_norm("x", rms_form), g.weight(DIM, FF)])
    h = g.gelu_tanh(g.op("Add", [h, g.const(g.rng.standard_normal(FF) * 0.5)]), gelu_form)
    x = g.op("Add", ["x", g.op("MatMul", [h, g.weight(FF, DIM)])])
    y = g.rms_norm(x, rms_form)
    graph = helper.make_graph(g.nodes, "block", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, SEQ, DIM])],
                              [helper.make_tensor_value_info(y, onnx.TensorProto.FLOAT, [1, SEQ, DIM])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def feed() -> np.ndarray:
    x = np.random.default_rng(3).standard_normal((1, SEQ, DIM)).astype(np.float32) * 2
    x[0, 0] = 0.0  # a zero row: sqrt(eps) in the denominator
    return x


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("rms_form", "gelu_form"), [("t5", "pow"), ("rsqrt", "cube_mul")])
def test_rms_norm_and_tanh_gelu_are_fused_with_onnxruntime_values(tmp_path: Path, rms_form: str, gelu_form: str,
                                                                  threads: int) -> None:
    path = block(tmp_path / "block.onnx", rms_form, gelu_form)
    x = feed()
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    core = opforge.Core()
    model = core.read_model(str(path))
    (ref,) = evaluate_model(model, [x])
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                                                 "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer({"x": x})[0])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    ran = [r.node_type for r in req.get_profiling_info() if r.status == "EXECUTED"]
    # the GELU is the first MatMul's post-op, the residual Add the second's: nothing else runs
    assert sorted(ran) == ["MatMul", "MatMul", "RMSNormalization", "RMSNormalization"], ran


@pytest.mark.skipif(not load_core().native_bf16(), reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")
def test_fused_block_in_bf16_stays_close(tmp_path: Path) -> None:
    """bf16 runs the MatMuls in bf16; the fused norms must not make that worse than bf16 rounding."""
    path = block(tmp_path / "block.onnx", "t5", "pow")
    x = feed()
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    got = np.asarray(compiled([x]).to_tuple()[0])
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=0.05, atol=0.05)
