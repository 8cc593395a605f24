"""A bf16 attention MatMul reads a Gather of one constant scalar index in place (emit.py
_folded_pick, core/nn.cpp picked_operand): torchvision Swin's qkv[0], qkv[1], qkv[2], which
passes/qkv_split.py takes from the projection's own axis, no longer copy a third of the
projection each. onnx.helper models with seeded weights against ONNX Runtime (bf16 tolerance)
and bit-exact against OPFORGE_CPU_QKV_PICK=0 (the same f32 values converted to bf16 either
way), 1 and 2 threads, with and without the qkv split pass; negative indices, a slice along a
middle axis, odd sizes; near-misses left as Gathers (an index array, a second reader, constant
weights, f32)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)
from test_cpu_qkv_split import attention_model  # noqa: E402

native_bf16 = bool(load_core().native_bf16())
pytestmark = pytest.mark.skipif(not native_bf16, reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")


def run(path: Path, precision: str, threads: int, feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[Any]]:
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": precision})
    req = compiled.create_infer_request()
    res = req.infer(feeds)
    got = [np.asarray(res[i]).copy() for i in range(len(compiled.outputs))]
    req.infer({k: v * 0.5 for k, v in feeds.items()})  # a second run with other data, same buffers
    again = req.infer(feeds)
    for i, want in enumerate(got):
        np.testing.assert_array_equal(np.asarray(again[i]), want, err_msg=f"output {i}, second run")
    return got, [r for r in req.get_profiling_info() if r.status == "EXECUTED"]


def check(path: Path, monkeypatch: pytest.MonkeyPatch, threads: int, precision: str = "bf16") -> tuple[list[Any], list[Any]]:
    """Runs ``path`` with the fold on and off; (profile on, profile off)."""
    model = onnx.load(str(path))
    rng = np.random.default_rng(11)
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in model.graph.input}
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    got, rows = run(path, precision, threads, feeds)
    for i, (a, w) in enumerate(zip(got, want, strict=True)):
        tol = 1e-4 if precision == "f32" else 3e-2
        np.testing.assert_allclose(a, w, rtol=tol, atol=tol * float(np.abs(w).max()), err_msg=f"output {i}")
    monkeypatch.setenv("OPFORGE_CPU_QKV_PICK", "0")
    off, rows_off = run(path, precision, threads, feeds)
    monkeypatch.delenv("OPFORGE_CPU_QKV_PICK")
    for i, (a, o) in enumerate(zip(got, off, strict=True)):
        np.testing.assert_array_equal(a, o, err_msg=f"output {i}: the switch off converts the same values")
    return rows, rows_off


def gathers(rows: list[Any]) -> list[str]:
    return [r.node_name for r in rows if r.node_type == "Gather"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("split_pass", [True, False])
@pytest.mark.parametrize(("b", "n", "h", "d"), [(4, 49, 3, 32), (1, 12, 2, 8), (2, 5, 1, 17)])
def test_swin_gathers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, b: int, n: int, h: int, d: int,
                      split_pass: bool, threads: int) -> None:
    """Swin's qkv[i] (scaled Q, transposed K, plain V), taken from the projection's axis by the
    qkv split pass or, with it off, from the transposed tensor's leading axis."""
    if not split_pass:
        monkeypatch.setenv("OPFORGE_CPU_QKV_SPLIT", "0")
    path = attention_model(tmp_path / "m.onnx", b=b, n=n, h=h, d=d, gather=True)
    rows, rows_off = check(path, monkeypatch, threads)
    # (without the pass K's Transpose comes before its scale: a step of its own that reads the
    # Gather, which stays; Q's and V's are read in place)
    assert len(gathers(rows)) == (0 if split_pass else 1), gathers(rows)
    assert len(gathers(rows_off)) == 3, gathers(rows_off)


def picks_model(path: Path, *, axis: int, idx: tuple[Any, Any], second_reader: bool = False,
                const_b: bool = False) -> Path:
    """x [2, 3, 5, 7] (axis 0) or [2, 5, 3, 7] (axis 2) -> a = x[idx[0]] along ``axis``, b =
    x[idx[1]] (a slice of the same tensor) -> a x b^T (b's Transpose folded), + a second output
    reading a's Gather (``second_reader``) or a x W with constant W (``const_b``)."""
    g = OnnxGraph(axis * 10 + len(str(idx)))
    shape = (2, 3, 5, 7) if axis == 0 else (2, 5, 3, 7)
    x = g.node("Relu", ["x"])  # a run-time tensor computed in the graph
    a = g.node("Gather", [x, g.const(np.asarray(idx[0], np.int64), np.int64)], axis=axis)
    if const_b:
        out = g.node("MatMul", [a, g.const(g.rng.standard_normal((7, 6)))])
        outs = [out]
    else:
        bb = g.node("Gather", [x, g.const(np.asarray(idx[1], np.int64), np.int64)], axis=axis)
        perm = [0, 2, 1] if np.asarray(idx[1]).ndim == 0 else [0, 1, 3, 2]  # (a 1-D index keeps the axis)
        out = g.node("MatMul", [a, g.node("Transpose", [bb], perm=perm)])
        outs = [out, a] if second_reader else [out]
    return g.save(path, shape, outs, opset=13)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("axis", "idx"), [(0, (1, 0)), (0, (-1, -2)), (2, (2, 0)), (2, (-3, 1))])
def test_slices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, axis: int, idx: tuple[int, int], threads: int) -> None:
    """Both operands slices of one tensor, negative indices, a middle axis (rows strided by 3)."""
    rows, rows_off = check(picks_model(tmp_path / "m.onnx", axis=axis, idx=idx), monkeypatch, threads)
    assert not gathers(rows), gathers(rows)
    assert len(gathers(rows_off)) == 2, gathers(rows_off)


@pytest.mark.parametrize(("kind", "kw", "precision", "left"), [
    ("index_array", {"axis": 0, "idx": ([1], [0])}, "bf16", 2),
    ("second_reader", {"axis": 0, "idx": (1, 0), "second_reader": True}, "bf16", 1),
    ("const_weights", {"axis": 0, "idx": (1, 0), "const_b": True}, "bf16", 1),
    ("f32", {"axis": 2, "idx": (2, 0)}, "f32", 2),
])
def test_near_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, kw: dict[str, Any], precision: str,
                     left: int) -> None:
    """Left as Gather steps: a 1-D index (the operand keeps the axis), a Gather read by another
    node too, a MatMul with constant weights (the inner-product paths), an f32 compile."""
    rows, _ = check(picks_model(tmp_path / "m.onnx", **kw), monkeypatch, 2, precision)
    assert len(gathers(rows)) == left, (kind, gathers(rows))
