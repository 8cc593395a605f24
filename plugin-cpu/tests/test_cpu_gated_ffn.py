"""A gated FFN (T5's gelu(x W0) * (x W1), Llama's silu(x Wg) * (x Wu)) runs as two MatMul steps:
the second projection multiplies the first's result in as a oneDNN binary post-op (emit.py
_gate_operand, core/nn.cpp mul_input) instead of a Multiply step of its own. onnx.helper models
against ONNX Runtime, f32 and bf16, 1 and 2 threads; bit for bit the numbers of the unfused steps
(the projection's result also a model output keeps its Multiply); near misses keep their
Multiply, and GPT-NeoX's second residual ((attn + mlp) + x after the sum post-op) keeps its Add
step (as a binary add post-op it measured level: kernels.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, TP = onnx.helper, onnx.TensorProto
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

native_bf16 = bool(load_core().native_bf16())
PRECISIONS = ["f32", "bf16"] if native_bf16 else ["f32"]


def gated_ffn(path: Path, *, s: int = 20, e: int = 48, f: int = 96, act: str = "silu", gate_first: bool = True,
              up_output: bool = False, miss: str = "") -> Path:
    """x [1, S, E] -> act(x Wg) * (x Wu) -> (.) Wd + x. ``gate_first``: the activated half's MatMul
    comes first in the graph (else the plain half's); ``up_output``: the plain half is a model
    output too; ``miss``: 'broadcast' (the gate multiplies a [1, 1, F] slice), 'const' (a constant
    factor of the full shape), 'square' (the product of a result with itself)."""
    g = OnnxGraph(11)

    def proj(x: str, cin: int, cout: int) -> str:
        return g.node("MatMul", [x, g.const(g.rng.standard_normal((cin, cout)) / np.sqrt(cin))])

    def activated() -> str:
        h = proj("x", e, f)
        if act == "silu":  # as torch exports SiLU
            return g.node("Mul", [h, g.node("Sigmoid", [h])])
        return g.node("Gelu", [h]) if act == "gelu" else g.node("Relu", [h])

    if gate_first:
        a = activated()
        u = proj("x", e, f)
    else:
        u = proj("x", e, f)
        a = activated()
    if miss == "broadcast":
        a = g.node("Slice", [a, g.const([0], np.int64), g.const([1], np.int64), g.const([1], np.int64)])
    elif miss == "const":
        a = g.const(g.rng.standard_normal((1, s, f)))
    elif miss == "square":
        a = u
    g.nodes.append(helper.make_node("Mul", [a, u], ["gated"], name="gate_mul"))
    h = "gated"
    y = g.node("Add", [proj(h, f, e), "x"])
    outs = [y] + ([u] if up_output else [])
    return g.save_model(path, [helper.make_tensor_value_info("x", TP.FLOAT, [1, s, e])], outs, 20)


def x_of(s: int = 20, e: int = 48) -> np.ndarray:
    return np.random.default_rng(3).standard_normal((1, s, e)).astype(np.float32)


def compile_cpu(_: Any, path: Path, prec: str, threads: int) -> Any:
    core = opforge.Core()  # with every installed frontend (the suite's fixture has none)
    return core.compile_model(core.read_model(str(path)), "CPU",
                              {"INFERENCE_PRECISION_HINT": prec, "INFERENCE_NUM_THREADS": threads})


def steps(compiled: Any) -> list[dict[str, Any]]:
    (plan,) = compiled._executable.programs().values()
    return list(plan.program.steps())


def run(compiled: Any, x: np.ndarray) -> np.ndarray:
    return np.asarray(compiled([x])[0])


def ort_run(path: Path, x: np.ndarray) -> np.ndarray:
    return np.asarray(ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0])


def rel(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return float(np.abs(a64 - b64).max() / np.abs(b64).max())


@pytest.mark.parametrize("prec", PRECISIONS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("act,gate_first", [("silu", True), ("silu", False), ("gelu", True), ("relu", False)])
def test_gate_is_a_post_op(core: Any, tmp_path: Path, prec: str, threads: int, act: str, gate_first: bool) -> None:
    x = x_of()
    fused = compile_cpu(core, gated_ffn(tmp_path / "f.onnx", act=act, gate_first=gate_first), prec, threads)
    st = steps(fused)
    assert not [s for s in st if s["type"] == "Multiply"], st
    gated = [s for s in st if any(n.startswith("gate_mul") for n in s["fused_names"] or [])]
    assert len(gated) == 1 and gated[0]["type"] == "MatMul" and len(gated[0]["inputs"]) == 3, st
    assert "ref" not in gated[0]["impl"], gated[0]["impl"]
    got = run(fused, x)
    # the plain half also a model output: it has a second reader, so the Multiply stays a step
    unfused = compile_cpu(core, gated_ffn(tmp_path / "u.onnx", act=act, gate_first=gate_first, up_output=True),
                          prec, threads)
    assert [s for s in steps(unfused) if s["type"] == "Multiply"]
    np.testing.assert_array_equal(got, run(unfused, x))
    want = ort_run(tmp_path / "f.onnx", x)
    assert rel(got, want) < (2e-2 if prec == "bf16" else 1e-5)


@pytest.mark.parametrize("miss", ["broadcast", "const", "square"])
def test_near_misses_keep_their_multiply(core: Any, tmp_path: Path, miss: str) -> None:
    x = x_of()
    path = gated_ffn(tmp_path / "m.onnx", miss=miss)
    for prec in PRECISIONS:
        compiled = compile_cpu(core, path, prec, 2)
        st = steps(compiled)
        assert [s for s in st if s["type"] == "Multiply" and s["name"].startswith("gate_mul")], st
        assert rel(run(compiled, x), ort_run(path, x)) < (2e-2 if prec == "bf16" else 1e-5)


@pytest.mark.parametrize("prec", PRECISIONS)
def test_non_finite_values_pass_through(core: Any, tmp_path: Path, prec: str) -> None:
    """A NaN or inf in the source reaches the output as the unfused steps give it."""
    x = x_of()
    x[0, 3, 5] = np.nan
    x[0, 7, 1] = np.inf
    fused = run(compile_cpu(core, gated_ffn(tmp_path / "f.onnx"), prec, 2), x)
    unfused = run(compile_cpu(core, gated_ffn(tmp_path / "u.onnx", up_output=True), prec, 2), x)
    np.testing.assert_array_equal(fused, unfused)
    assert np.isnan(fused[0, 3]).any() and np.isfinite(fused[0, 0]).all()


def parallel_block(path: Path, *, s: int = 20, e: int = 48, same: bool = False) -> Path:
    """GPT-NeoX's parallel residual: y = ((h Wo + bo) + mlp) + x with mlp = relu(x) Wm + bm;
    ``same``: the second residual is mlp again (the sum's own operand)."""
    g = OnnxGraph(13)
    mlp = g.node("Add", [g.node("MatMul", [g.node("Relu", ["x"]), g.const(g.rng.standard_normal((e, e)) / np.sqrt(e))]),
                         g.const(g.rng.standard_normal(e) * 0.1)])
    h = g.node("Tanh", ["x"])
    o = g.node("Add", [g.node("MatMul", [h, g.const(g.rng.standard_normal((e, e)) / np.sqrt(e))]),
                       g.const(g.rng.standard_normal(e) * 0.1)])
    first = g.node("Add", [o, mlp])
    g.nodes.append(helper.make_node("Add", [first, mlp if same else "x"], ["y"], name="second_residual"))
    return g.save_model(path, [helper.make_tensor_value_info("x", TP.FLOAT, [1, s, e])], ["y"], 20)


@pytest.mark.parametrize("prec", PRECISIONS)
@pytest.mark.parametrize("same", [False, True])
def test_a_second_residual_keeps_its_add(core: Any, tmp_path: Path, prec: str, same: bool,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # passes/parallel_residual.py turns ((h Wo + bo) + mlp) + x into two sum post-ops with no Add
    # left (test_cpu_parallel_residual.py); this test is about the path without that pass.
    monkeypatch.setenv("OPFORGE_CPU_PARALLEL_RESIDUAL", "0")
    x = x_of()
    path = parallel_block(tmp_path / "p.onnx", same=same)
    compiled = compile_cpu(core, path, prec, 2)
    assert [s for s in steps(compiled) if s["type"] == "Add" and s["name"].startswith("second_residual")]
    assert rel(run(compiled, x), ort_run(path, x)) < (2e-2 if prec == "bf16" else 1e-5)
