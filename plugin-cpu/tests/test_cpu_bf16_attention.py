"""bf16 attention on CPU: the head-split Transposes before Q x K^T and P x V are read by the
MatMuls through permuted strides (their f32 -> bf16 operand conversion moves the values, no
Transpose step), the head merge after P x V is written by that MatMul through permuted strides,
and the mask Add after the scale is a binary post-op of the Q x K^T MatMul."""

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
    # the three head splits, the mask Add and the head merge after P x V (written by that MatMul
    # through permuted strides) are no steps of their own
    assert not any(r.node_type in ("Transpose", "Add") for r in rows), [(r.node_name, r.node_type) for r in rows]
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
