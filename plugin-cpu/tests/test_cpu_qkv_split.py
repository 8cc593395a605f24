"""timm's fused QKV head split (Reshape [B, N, 3, H, D] -> Transpose [2, 0, 3, 1, 4] -> Split ->
Squeeze, Q and K^T scaled) runs as a split of the projection whose parts' head Transposes the
attention MatMuls read through their strides (passes/qkv_split.py). onnx.helper models against
ONNX Runtime, f32 and bf16, 1 and 2 threads, bit-exact with OPFORGE_CPU_QKV_SPLIT=0; EdgeNeXt's
order [2, 0, 3, 4, 1], Split with and without sizes, Swin's Gathers, a part also read elsewhere,
near-misses."""

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

native_bf16 = bool(load_core().native_bf16())


def attention_model(path: Path, *, b: int, n: int, h: int, d: int, scale: bool = True, order: str = "timm",
                    split_sizes: bool = True, extra_output: bool = False, split_axis_len: int = 3,
                    gather: bool = False) -> Path:
    """x [B, N, H*D] -> QKV projection -> timm's head split -> softmax(q k^T) v -> head merge ->
    projection. ``order='edgenext'``: Transpose [2, 0, 3, 4, 1] (parts [B, H, D, N]) and
    attention over D; ``scale``: q and k^T each times sqrt(1/sqrt(D)) (torch's SDPA export);
    ``extra_output``: K's part is a model output too; ``split_axis_len`` != 3 splits Q and KV
    unevenly (a near-miss: parts are not of size 1); ``gather``: torchvision Swin's qkv[0], qkv[1],
    qkv[2] (a Gather of one scalar index each) instead of the Split."""
    g = OnnxGraph(b * 100 + n + h + d)
    c = h * d
    y = g.node("MatMul", ["x", g.const(g.rng.standard_normal((c, 3 * c)) * c ** -0.5)])
    y = g.node("Add", [y, g.const(g.rng.standard_normal(3 * c) * 0.1)])
    y = g.node("Reshape", [y, g.const([b, n, 3, h, d], np.int64)])
    y = g.node("Transpose", [y], perm=[2, 0, 3, 1, 4] if order == "timm" else [2, 0, 3, 4, 1])
    sizes = [1, 1, 1] if split_axis_len == 3 else [1, 2]
    if gather:
        q, k, v = (g.node("Gather", [y, g.const(np.int64(i), np.int64)], axis=0) for i in range(3))
    parts = [] if gather else g.node_outs("Split", [y, g.const(sizes, np.int64)] if split_sizes else [y], len(sizes), axis=0)
    if split_axis_len != 3:
        q = g.node("Squeeze", [parts[0], g.const([0], np.int64)])
        kv = g.node_outs("Split", [parts[1], g.const([1, 1], np.int64)], 2, axis=0)
        k, v = (g.node("Squeeze", [t, g.const([0], np.int64)]) for t in kv)
    elif not gather:
        q, k, v = (g.node("Squeeze", [t, g.const([0], np.int64)]) for t in parts)
    s = float((1.0 / np.sqrt(d)) ** 0.5)
    if scale:
        q = g.node("Mul", [q, g.const(np.float32(s))])
    kt = g.node("Transpose", [k], perm=[0, 1, 3, 2])
    if scale:
        kt = g.node("Mul", [kt, g.const(np.float32(s))])
    att = g.node("Softmax", [g.node("MatMul", [q, kt])], axis=-1)
    o = g.node("MatMul", [att, v])
    o = g.node("Transpose", [o], perm=[0, 2, 1, 3] if order == "timm" else [0, 3, 1, 2])
    o = g.node("Reshape", [o, g.const([b, n, c], np.int64)])
    o = g.node("MatMul", [o, g.const(g.rng.standard_normal((c, c)) * c ** -0.5)])
    outs = [o, k] if extra_output else [o]
    return g.save(path, (b, n, c), outs, opset=13)


def run(path: Path, precision: str, threads: int, x: np.ndarray) -> tuple[list[np.ndarray], list[Any]]:
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": precision})
    req = compiled.create_infer_request()
    res = req.infer({"x": x})
    got = [np.asarray(res[i]).copy() for i in range(len(compiled.outputs))]
    req.infer({"x": x * 0.5})  # a second run with other data reads the same buffers
    again = req.infer({"x": x})
    for i, want in enumerate(got):
        np.testing.assert_array_equal(np.asarray(again[i]), want, err_msg=f"output {i}, second run")
    return got, [r for r in req.get_profiling_info() if r.status == "EXECUTED"]


def check(path: Path, monkeypatch: pytest.MonkeyPatch, precision: str, threads: int) -> list[Any]:
    dims = tuple(d.dim_value for d in onnx.load(str(path)).graph.input[0].type.tensor_type.shape.dim)
    x = np.random.default_rng(7).standard_normal(dims).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got, rows = run(path, precision, threads, x)
    for i, (a, w) in enumerate(zip(got, want, strict=True)):
        if precision == "f32":
            np.testing.assert_allclose(a, w, rtol=1e-4, atol=1e-4, err_msg=f"output {i}")
        else:
            np.testing.assert_allclose(a, w, rtol=3e-2, atol=3e-2 * float(np.abs(w).max()), err_msg=f"output {i}")
    monkeypatch.setenv("OPFORGE_CPU_QKV_SPLIT", "0")
    off, _ = run(path, precision, threads, x)
    monkeypatch.delenv("OPFORGE_CPU_QKV_SPLIT")
    for i, (a, o) in enumerate(zip(got, off, strict=True)):
        np.testing.assert_array_equal(a, o, err_msg=f"output {i}: the switch off moves the same values")
    return rows


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("b", "n", "h", "d"), [(1, 197, 3, 64), (2, 17, 4, 24), (1, 5, 1, 17)])
@pytest.mark.parametrize("scale", [True, False])
def test_timm_split_f32(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, b: int, n: int, h: int, d: int, scale: bool,
                        threads: int) -> None:
    rows = check(attention_model(tmp_path / "m.onnx", b=b, n=n, h=h, d=d, scale=scale), monkeypatch, "f32", threads)
    # the head Transposes (Q's, K's two merged, V's) are read through the MatMuls' strides
    assert not [r for r in rows if r.node_type in ("Transpose", "Squeeze")], [(r.node_type, r.node_name) for r in rows]
    assert sum(r.node_type == "VariadicSplit" for r in rows) == 1


@pytest.mark.skipif(not native_bf16, reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("b", "n", "h", "d"), [(1, 197, 3, 64), (2, 64, 4, 24)])
def test_timm_split_bf16(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, b: int, n: int, h: int, d: int,
                         threads: int) -> None:
    rows = check(attention_model(tmp_path / "m.onnx", b=b, n=n, h=h, d=d), monkeypatch, "bf16", threads)
    assert not [r for r in rows if r.node_type == "Transpose"], [(r.node_type, r.node_name) for r in rows]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("kind", "kw"), [("edgenext", {"order": "edgenext"}), ("split_attr", {"split_sizes": False}),
                                          ("extra_output", {"extra_output": True}), ("uneven", {"split_axis_len": 2}),
                                          ("gather", {"gather": True})])
def test_variants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, kw: dict[str, Any], threads: int) -> None:
    rows = check(attention_model(tmp_path / "m.onnx", b=1, n=12, h=2, d=8, **kw), monkeypatch, "f32", threads)
    split_steps = [r.node_name for r in rows if r.node_type in ("VariadicSplit", "Split", "Gather")]
    if kind == "uneven":  # parts of 1 and 2: left as written
        assert not any(n.endswith("/before") for n in split_steps), split_steps
    else:
        assert any(n.endswith("/before") for n in split_steps), split_steps
    if kind == "gather":  # the head Transposes folded into the MatMuls as after a Split
        assert not [r for r in rows if r.node_type == "Transpose"], [(r.node_type, r.node_name) for r in rows]
