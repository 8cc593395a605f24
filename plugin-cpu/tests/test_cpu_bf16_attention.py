"""bf16 attention on CPU: the head-split Transposes before Q x K^T and P x V are read by the
MatMuls through permuted strides (their f32 -> bf16 operand conversion moves the values, no
Transpose step), the head merge after P x V is written by that MatMul through permuted strides,
the mask Add after the scale is a binary post-op of the Q x K^T MatMul, and the Softmax is
computed by the P x V MatMul into its bf16 source (the rows rounded to bf16 once, no f32 P)."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import const, param, rand
from opforge.graph import Model
from opforge_cpu._loader import load_core

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")
S, H, D = 32, 4, 16
E = H * D


def to_bf16(a: np.ndarray) -> np.ndarray:
    """f32 -> nearest bf16 (ties to even), as f64."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def attention(k_order: list[int], transpose_b: bool) -> tuple[Model, dict[str, np.ndarray]]:
    x, mask = param("x", [1, S, E]), param("mask", [1, 1, 1, S])
    w = {n: rand((E, E), seed=i) * E ** -0.5 for i, n in enumerate("qkv")}
    b = {n: rand((E,), seed=10 + i) * 0.1 for i, n in enumerate("qkv")}

    def heads(n: str, order: list[int]) -> Any:
        h = opforge.op("Add", opforge.op("MatMul", x, const(w[n]), name=f"{n}_mm"), const(b[n]), name=f"{n}_bias")
        h = opforge.op("Reshape", h, const(np.array([1, S, H, D], np.int64), np.int64), special_zero=False,
                       name=f"{n}_split")
        return opforge.op("Transpose", h, const(np.array(order, np.int64), np.int64), name=f"{n}_heads")

    q, k, v = heads("q", [0, 2, 1, 3]), heads("k", k_order), heads("v", [0, 2, 1, 3])
    s = opforge.op("MatMul", q, k, transpose_a=False, transpose_b=transpose_b, name="qk")
    s = opforge.op("Divide", s, const(np.float32(D ** 0.5)), name="scale")
    s = opforge.op("Add", s, mask, name="mask_add")
    p = opforge.op("Softmax", s, axis=-1, name="softmax")
    o = opforge.op("MatMul", p, v, name="pv")
    o = opforge.op("Transpose", o, const(np.array([0, 2, 1, 3], np.int64), np.int64), name="merge")
    o = opforge.op("Reshape", o, const(np.array([1, S, E], np.int64), np.int64), special_zero=False, name="out")
    return Model([o], [x, mask], name="attention"), {"w_" + n: w[n] for n in "qkv"} | {"b_" + n: b[n] for n in "qkv"}


def emulated(xv: np.ndarray, mv: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    """What the bf16 program computes: bf16 operands, f64 sums standing in for f32 accumulation,
    f32 tensors between the ops, the scale and mask added to the f32 scores."""
    def dense(n: str) -> np.ndarray:
        y = to_bf16(xv[0]) @ to_bf16(p["w_" + n]) + p["b_" + n]
        return y.astype(np.float32).reshape(S, H, D).transpose(1, 0, 2)  # [H, S, D]
    q, k, v = dense("q"), dense("k"), dense("v")
    s = (to_bf16(q) @ np.swapaxes(to_bf16(k), -1, -2)) / D ** 0.5 + mv.reshape(1, 1, S)
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    pr = (e / e.sum(-1, keepdims=True)).astype(np.float32)
    o = to_bf16(pr) @ to_bf16(v)  # [H, S, D]
    return o.transpose(1, 0, 2).reshape(1, S, E)


@needs_bf16
@pytest.mark.parametrize(("k_order", "transpose_b"), [([0, 2, 3, 1], False), ([0, 2, 1, 3], True)])
@pytest.mark.parametrize("threads", [1, 2])
def test_bf16_attention_folds_head_transposes_and_mask(core: Any, k_order: list[int], transpose_b: bool,
                                                       threads: int) -> None:
    model, params = attention(k_order, transpose_b)
    xv = rand((1, S, E), seed=20)
    mv = np.zeros((1, 1, 1, S), np.float32)
    mv[..., -5:] = -1e4  # padded keys: dropping the mask would change every output row
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16", "ENABLE_PROFILING": True,
                                                 "INFERENCE_NUM_THREADS": threads})
    request = compiled.create_infer_request()
    got = np.asarray(request.infer([xv, mv])[0]).astype(np.float64)
    want = emulated(xv, mv, params)
    f32 = np.asarray(core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})([xv, mv])[0])
    scale = np.abs(f32).max()
    assert np.abs(got - want).max() / scale < 2e-3  # the bf16 arithmetic, to f32 summation order
    assert 1e-4 < np.abs(got - f32).max() / scale < 3e-2  # it really rounded, within bf16's reach
    rows = [r for r in request.get_profiling_info() if r.status == "EXECUTED"]
    # the three head splits, the mask Add, the Softmax (computed by P x V into its bf16 source)
    # and the head merge after P x V (written by that MatMul through permuted strides) are no
    # steps of their own
    assert not any(r.node_type in ("Transpose", "Add", "Softmax") for r in rows), [
        (r.node_name, r.node_type) for r in rows]
    assert all(r.exec_type.startswith("brg") for r in rows if r.node_type == "MatMul"), [
        (r.node_name, r.exec_type) for r in rows]


@needs_bf16
def test_transpose_with_another_reader_still_runs(core: Any) -> None:
    # a head split that something else reads too stays a Transpose step; an Add of a per-row
    # [B, H, S, 1] tensor is no post-op (oneDNN's bf16 MatMul has no fast kernel for that
    # broadcast: its reference one would run instead, in f32)
    x = param("x", [1, S, H, D])
    t = opforge.op("Transpose", x, const(np.array([0, 2, 1, 3], np.int64), np.int64), name="heads")
    s = opforge.op("MatMul", t, t, transpose_b=True, name="self_scores")
    y = opforge.op("Add", opforge.op("ReduceSum", t, const(np.array([3], np.int64), np.int64), keep_dims=True,
                                     name="other_reader"), s, name="sum")
    xv = rand((1, S, H, D), seed=3)
    compiled = core.compile_model(Model([y], [x], name="m"), "CPU", {"INFERENCE_PRECISION_HINT": "bf16",
                                                                     "ENABLE_PROFILING": True})
    request = compiled.create_infer_request()
    got = np.asarray(request.infer([xv])[0])
    rows = {r.node_name: r for r in request.get_profiling_info() if r.status == "EXECUTED"}
    assert rows["heads"].node_type == "Transpose" and rows["sum"].node_type == "Add", rows
    assert "bf16" in rows["self_scores"].exec_type, rows["self_scores"].exec_type
    tv = xv.transpose(0, 2, 1, 3).astype(np.float64)
    want = tv.sum(3, keepdims=True) + to_bf16(tv) @ np.swapaxes(to_bf16(tv), -1, -2)
    assert np.abs(got - want).max() / np.abs(want).max() < 1e-6


# --- the Softmax before P x V, folded into that bf16 MatMul (emit.py _folded_softmax): it writes
# the softmax's rows as bf16 straight into the MatMul's source


def scores_then_pv(h: int, s: int, d: int, extra_reader: bool = False, axis: int = -1) -> Model:
    """softmax(scores + mask) x V, as attention runs it after Q x K^T (scores given)."""
    sc, mask, v = param("scores", [1, h, s, s]), param("mask", [1, 1, 1, s]), param("v", [1, h, s, d])
    p = opforge.op("Softmax", opforge.op("Add", sc, mask, name="mask_add"), axis=axis, name="softmax")
    outs = [opforge.op("MatMul", p, v, name="pv")]
    if extra_reader:
        outs.append(opforge.op("Relu", p, name="other_reader"))  # keeps the Softmax a step of its own
    return Model(outs, [sc, mask, v], name="pv")


def executed(request: Any) -> list[Any]:
    return [r for r in request.get_profiling_info() if r.status == "EXECUTED"]


def softmax64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@needs_bf16
@pytest.mark.parametrize(("h", "s", "d"), [(3, 197, 64), (2, 7, 16), (1, 33, 8)])
@pytest.mark.parametrize("threads", [1, 2])
def test_bf16_softmax_folds_into_pv(core: Any, h: int, s: int, d: int, threads: int) -> None:
    scores = rand((1, h, s, s), seed=1, low=-6, high=6)
    v = rand((1, h, s, d), seed=2)
    mask = np.zeros((1, 1, 1, s), np.float32)
    mask[..., -(s // 4 + 1):] = -1e4  # padded keys
    if s > 8:
        mask[..., 0] = -np.inf  # a -inf mask entry is exactly 0, as in the f32 Softmax
    cfg = {"INFERENCE_PRECISION_HINT": "bf16", "ENABLE_PROFILING": True, "INFERENCE_NUM_THREADS": threads}
    fused = core.compile_model(scores_then_pv(h, s, d), "CPU", cfg).create_infer_request()
    got = np.asarray(fused.infer([scores, mask, v])[0])
    rows = executed(fused)
    assert not any(r.node_type == "Softmax" for r in rows), [(r.node_name, r.node_type) for r in rows]
    assert any(r.node_type == "MatMul" and r.exec_type.startswith("brg") for r in rows), rows
    # the same numbers as the Softmax step followed by the MatMul's own f32 -> bf16 conversion
    split = core.compile_model(scores_then_pv(h, s, d, extra_reader=True), "CPU", cfg).create_infer_request()
    want_split = np.asarray(split.infer([scores, mask, v])[0])
    assert any(r.node_type == "Softmax" for r in executed(split))
    np.testing.assert_array_equal(got, want_split)
    # what bf16 computes: P rounded to bf16, V rounded to bf16, f32 (here f64) sums
    p = softmax64(scores + mask)
    want = to_bf16(p.astype(np.float32)) @ to_bf16(v)
    scale = np.abs(want).max()
    assert np.abs(got - want).max() / scale < 2e-3
    f32 = softmax64(scores + mask) @ v.astype(np.float64)
    assert np.abs(got - f32).max() / scale < 3e-2  # within bf16's reach of the exact result


@needs_bf16
@pytest.mark.parametrize(("mask_shape", "folded"), [
    ((1, 1, 1, 13), True),   # padded keys (a Q x K^T would take it as its post-op)
    ((1, 1, 13, 13), True),  # GPT-2's causal mask, broadcast over the heads
    ((1, 3, 13, 13), True),  # T5's position bias, one per head
    ((3, 13, 13), True),     # the same, rank 3
    ((1, 3, 1, 13), False),  # per head and key: no row broadcast, the Add stays a step
])
@pytest.mark.parametrize("threads", [1, 2])
def test_bf16_add_before_the_folded_softmax(core: Any, mask_shape: tuple[int, ...], folded: bool,
                                            threads: int) -> None:
    h, s, d = 3, 13, 16
    sc, mask, v = param("scores", [1, h, s, s]), param("mask", list(mask_shape)), param("v", [1, h, s, d])
    p = opforge.op("Softmax", opforge.op("Add", sc, mask, name="mask_add"), axis=-1, name="softmax")
    model = Model([opforge.op("MatMul", p, v, name="pv")], [sc, mask, v], name="pv")
    scores, vv = rand((1, h, s, s), seed=11, low=-5, high=5), rand((1, h, s, d), seed=12)
    mv = rand(mask_shape, seed=13, low=-3, high=3)
    if mask_shape[-2:] == (s, s):
        mv = mv + np.triu(np.full((s, s), -1e4, np.float32), 1)  # causal
    cfg = {"INFERENCE_PRECISION_HINT": "bf16", "ENABLE_PROFILING": True, "INFERENCE_NUM_THREADS": threads}
    request = core.compile_model(model, "CPU", cfg).create_infer_request()
    got = np.asarray(request.infer([scores, mv, vv])[0])
    kinds = [r.node_type for r in executed(request)]
    assert ("Add" not in kinds and "Softmax" not in kinds) == folded, kinds
    want = to_bf16(softmax64(scores.astype(np.float32) + mv).astype(np.float32)) @ to_bf16(vv)
    assert np.abs(got - want).max() / np.abs(want).max() < 2e-3
    # bit for bit what the Add and Softmax steps compute (a second reader of P keeps them)
    split = Model([opforge.op("MatMul", p, v, name="pv2"), opforge.op("Relu", p, name="other")], [sc, mask, v])
    np.testing.assert_array_equal(got, np.asarray(core.compile_model(split, "CPU", cfg)([scores, mv, vv])[0]))


@needs_bf16
def test_bf16_folded_softmax_nan_inf_rows(core: Any) -> None:
    # a row with a NaN or +inf is NaN throughout, a row of -inf alone is NaN (x - max), as the
    # Softmax step computes them; the other rows are untouched
    h, s, d = 2, 40, 16
    scores = rand((1, h, s, s), seed=3)
    scores[0, 0, 3, 5] = np.nan
    scores[0, 1, 7, 0] = np.inf
    scores[0, 1, 9, :] = -np.inf
    v = rand((1, h, s, d), seed=4)
    mask = np.zeros((1, 1, 1, s), np.float32)
    cfg = {"INFERENCE_PRECISION_HINT": "bf16"}
    got = np.asarray(core.compile_model(scores_then_pv(h, s, d), "CPU", cfg)([scores, mask, v])[0])
    want = np.asarray(core.compile_model(scores_then_pv(h, s, d, extra_reader=True), "CPU", cfg)([scores, mask, v])[0])
    np.testing.assert_array_equal(got, want)
    bad = {(0, 3), (1, 7), (1, 9)}
    for hh in range(h):
        for r in range(s):
            assert np.isnan(got[0, hh, r]).all() == ((hh, r) in bad), (hh, r)
    assert not np.isnan(got[0, 0, 4]).any()


@needs_bf16
def test_bf16_folded_softmax_long_rows(core: Any) -> None:
    # rows longer than the kernel's stack row (2048): the exponentials go to a heap row
    s, d = 2100, 8
    sc, v = param("scores", [1, 1, 3, s]), param("v", [1, 1, s, d])
    p = opforge.op("Softmax", sc, axis=3, name="softmax")
    model = Model([opforge.op("MatMul", p, v, name="pv")], [sc, v], name="long")
    scores, vv = rand((1, 1, 3, s), seed=5, low=-8, high=8), rand((1, 1, s, d), seed=6)
    request = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16",
                                                "ENABLE_PROFILING": True}).create_infer_request()
    got = np.asarray(request.infer([scores, vv])[0])
    assert not any(r.node_type == "Softmax" for r in executed(request))
    want = to_bf16(softmax64(scores).astype(np.float32)) @ to_bf16(vv)
    assert np.abs(got - want).max() / np.abs(want).max() < 2e-3


@pytest.mark.parametrize(("precision", "axis", "extra"), [("f32", -1, False), ("bf16", 2, False), ("bf16", -1, True)])
def test_softmax_stays_a_step(core: Any, precision: str, axis: int, extra: bool) -> None:
    # f32 programs, a Softmax over another axis and one with a second reader keep their Softmax step
    if precision == "bf16" and not bool(load_core().native_bf16()):
        pytest.skip("this host has no bf16 arithmetic (AVX512_BF16/AMX)")
    h, s, d = 2, 12, 8
    scores, v = rand((1, h, s, s), seed=7), rand((1, h, s, d), seed=8)
    mask = np.zeros((1, 1, 1, s), np.float32)
    request = core.compile_model(scores_then_pv(h, s, d, extra, axis), "CPU", {
        "INFERENCE_PRECISION_HINT": precision, "ENABLE_PROFILING": True}).create_infer_request()
    got = np.asarray(request.infer([scores, mask, v])[0])
    assert any(r.node_type == "Softmax" for r in executed(request))
    p = scores.astype(np.float64)
    e = np.exp(p - p.max(axis, keepdims=True))
    want = (e / e.sum(axis, keepdims=True)) @ v.astype(np.float64)
    assert np.abs(got - want).max() / np.abs(want).max() < (1e-5 if precision == "f32" else 1e-2)
