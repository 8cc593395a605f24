"""A parallel block's residual (mlp + attn) + x taken as (mlp + x) + attn (passes/parallel_residual.py):
both Adds become sum post-ops of the two projections (no Add step left), in f32 and bf16, at 1 and
2 threads, against ONNX Runtime; the switch off keeps the Add step; graphs it must leave alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from cpu_testing import infer_twice
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime")

S, D, F = 64, 32, 96


def save_block(path: Path, mode: str = "parallel", seed: int = 3) -> Path:
    """x [1, S, D] -> a = x Wa + ba and m = gelu-free MLP relu(x W1) W2 + b2 side by side, then
    Add(Add(m, a), x) as GPT-NeoX's export writes it. ``mode``: "parallel"; "x_const" (the
    residual is a constant); "not_projection" (a is Relu(x Wa), no projection)."""
    rng = np.random.default_rng(seed)
    w = {n: (rng.standard_normal(s) * 0.2).astype(np.float32)
         for n, s in {"wa": (D, D), "ba": (D,), "w1": (D, F), "w2": (F, D), "b2": (D,), "xc": (1, S, D)}.items()}
    nodes = [helper.make_node("MatMul", ["x", "wa"], ["a0"]),
             helper.make_node("Add", ["a0", "ba"], ["a"]),
             helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Relu", ["h"], ["hr"]),
             helper.make_node("MatMul", ["hr", "w2"], ["m0"]),
             helper.make_node("Add", ["b2", "m0"], ["m"])]
    attn = "a"
    if mode == "not_projection":
        nodes.append(helper.make_node("Relu", ["a"], ["ar"]))
        attn = "ar"
    residual = "xc" if mode == "x_const" else "x"
    nodes += [helper.make_node("Add", ["m", attn], ["s"], name="inner_add"),
              helper.make_node("Add", ["s", residual], ["y"], name="outer_add")]
    inits = [numpy_helper.from_array(v, k) for k, v in w.items() if k != "xc" or mode == "x_const"]
    graph = helper.make_graph(nodes, "parallel_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, D])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, D])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def run(path: Path, threads: int, precision: str) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Our output, the exec types of the executed Add steps (nodes profiled as Add), ORT's output."""
    x = np.random.default_rng(11).standard_normal((1, S, D)).astype(np.float32)
    got, rows = infer_twice(path, {"x": x}, threads, precision)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    return got[0], [r.exec_type for r in rows if r.node_type == "Add"], want


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_both_adds_become_matmul_sums(tmp_path: Path, precision: str) -> None:
    path = save_block(tmp_path / "m.onnx")
    one, adds1, want = run(path, 1, precision)
    two, adds2, _ = run(path, 2, precision)
    assert adds1 == [] and adds2 == [], (adds1, adds2)
    np.testing.assert_array_equal(one, two)
    scale = float(np.abs(want).max())
    tol = 1e-5 if precision == "f32" else 3e-2
    assert float(np.abs(one - want).max()) / scale < tol


def test_switch_off_keeps_the_add_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPFORGE_CPU_PARALLEL_RESIDUAL=0 (read at each compile): the outer Add runs as a step of its
    own, and the result is within one f32 rounding per element of the reassociated one."""
    path = save_block(tmp_path / "m.onnx")
    on, _, want = run(path, 1, "f32")
    monkeypatch.setenv("OPFORGE_CPU_PARALLEL_RESIDUAL", "0")
    off, adds, _ = run(path, 1, "f32")
    assert len(adds) == 1, adds
    np.testing.assert_allclose(on, off, rtol=1e-6, atol=1e-6 * float(np.abs(want).max()))


@pytest.mark.parametrize("mode", ["x_const", "not_projection"])
def test_other_graphs_left_alone(tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A constant residual or an operand that is no projection: not rewritten (the same Add
    steps as with the pass switched off, the same bytes) and the result matches ONNX Runtime."""
    path = save_block(tmp_path / "m.onnx", mode)
    got, adds, want = run(path, 1, "f32")
    assert adds, adds
    monkeypatch.setenv("OPFORGE_CPU_PARALLEL_RESIDUAL", "0")
    off, adds_off, _ = run(path, 1, "f32")
    assert adds == adds_off
    np.testing.assert_array_equal(got, off)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
