"""Attention's bf16 MatMuls of two run-time operands (Q x K^T and P x V) at 2 threads run as chunks
of (batches, row block) that the threads claim (core/attn_split.cpp): each chunk converts its own
source rows (or computes their folded Softmax, mask or bias added) and its batches' weights to bf16,
and runs a one-thread oneDNN sub-primitive with the step's post-ops (scale, mask row), writing at its
offset of the destination. The exec type says ``+attnK``. With the head merge fused into P x V
([B, H, S, D] written as [B, S, H, D]) a chunk is a row block of all heads (oneDNN 3.2's brgemm
takes that destination only as a dense block), its rows gathered into the thread's own buffer.
Each output element is the same f32 sum of the same bf16 products as in the unsplit primitive, so
2 threads are bit-exact against 1, and within bf16 rounding of ONNX Runtime's f32. Graphs in the two
shapes real models export: timm's one qkv projection split by Gather, and Hugging Face's three
projections whose head-split Transposes the MatMuls read through strides."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from cpu_testing import infer_twice  # noqa: E402
from onnx_graph import TP, OnnxGraph, helper  # noqa: E402  (after onnx is known to be there)

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")


class Graph(OnnxGraph):
    def proj(self, x: str, e_in: int, e_out: int) -> str:
        w = self.rng.standard_normal((e_in, e_out)) * e_in ** -0.5
        return self.node("Add", [self.node("MatMul", [x, self.const(w)]), self.const(self.rng.standard_normal(e_out) * 0.1)])

    def shape(self, dims: list[int]) -> str:
        return self.const(np.array(dims, np.int64), np.int64)

    def attention(self, b: int, s: int, h: int, d: int, style: str, mask: str | None, bias: str | None = None) -> str:
        e = h * d
        scale = d ** -0.5
        if style == "timm":
            # one qkv projection -> [B, S, 3, H, D] -> [3, B, H, S, D], Q/K/V gathered; Q scaled
            qkv = self.node("Reshape", [self.proj("x", e, 3 * e), self.shape([b, s, 3, h, d])])
            qkv = self.node("Transpose", [qkv], perm=[2, 0, 3, 1, 4])
            q, k, v = (self.node("Gather", [qkv, self.const(np.array(i, np.int64), np.int64)], axis=0) for i in range(3))
            q = self.node("Mul", [q, self.const(np.float32(scale))])
            scores = self.node("MatMul", [q, self.node("Transpose", [k], perm=[0, 1, 3, 2])])
        else:
            # Hugging Face: three projections, head-split Transposes (K^T's too), scores scaled
            def heads(order: list[int]) -> str:
                return self.node("Transpose", [self.node("Reshape", [self.proj("x", e, e), self.shape([b, s, h, d])])],
                                 perm=order)
            q, k, v = heads([0, 2, 1, 3]), heads([0, 2, 3, 1]), heads([0, 2, 1, 3])
            scores = self.node("Mul", [self.node("MatMul", [q, k]), self.const(np.float32(scale))])
        if mask is not None:
            scores = self.node("Add", [scores, "mask"])
        if bias is not None:
            scores = self.node("Add", [scores, bias])  # Swin's relative position bias
        p = self.node("Softmax", [scores], axis=-1)
        o = self.node("Transpose", [self.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
        return self.proj(self.node("Reshape", [o, self.shape([b, s, e])]), e, e)

    def save_attention(self, path: Path, b: int, s: int, h: int, d: int, style: str,
                       mask_shape: tuple[int, ...] | None) -> Path:
        out = self.attention(b, s, h, d, style, None if mask_shape is None else "mask")
        inputs = [helper.make_tensor_value_info("x", TP.FLOAT, (b, s, h * d))]
        if mask_shape is not None:
            inputs.append(helper.make_tensor_value_info("mask", TP.FLOAT, mask_shape))
        return self.save_model(path, inputs, [out], 14)


def masks(kind: str | None, b: int, s: int) -> tuple[tuple[int, ...] | None, np.ndarray | None]:
    """The mask input of a kind: padded keys ([B, 1, 1, S], -1e4), causal ([1, 1, S, S], -inf
    above the diagonal), or causal with row 1 all -inf (that row's softmax is NaN, as ONNX's)."""
    if kind is None:
        return None, None
    if kind == "padding":
        m = np.zeros((b, 1, 1, s), np.float32)
        for i in range(b):
            m[i, ..., s - 1 - i:] = -1e4
        return m.shape, m
    m = np.triu(np.full((s, s), -np.inf, np.float32), 1).reshape(1, 1, s, s)
    if kind == "dead_row" and s > 1:
        m[0, 0, 1, :] = -np.inf
    return m.shape, m


def run(path: Path, feeds: dict[str, np.ndarray], threads: int) -> tuple[np.ndarray, dict[str, str]]:
    got, rows = infer_twice(path, feeds, threads, "bf16")
    return got[0], {r.node_name: r.exec_type for r in rows}


def save_windows(tmp_path: Path, seed: int) -> tuple[Path, dict[str, np.ndarray]]:
    """Swin's windows: 64 windows x 3 heads of 49 x 32 with a relative position bias
    [1, 3, 49, 49] added before the softmax. The model's path and its feeds."""
    b, s, h, d = 64, 49, 3, 32
    g = Graph(seed)
    bias = g.const(g.rng.standard_normal((1, h, s, s)) * 0.5)
    out = g.attention(b, s, h, d, "hf", None, bias)
    path = g.save_model(tmp_path / "m.onnx", [helper.make_tensor_value_info("x", TP.FLOAT, (b, s, h * d))], [out], 14)
    return path, {"x": g.rng.standard_normal((b, s, h * d)).astype(np.float32)}


def compare_switched_off(tmp_path: Path, style: str, switch: str) -> tuple[dict[str, str], str]:
    """A 197-token, 3-head attention at 2 threads here and in a child process with ``switch``=0
    (the switches are read once a process): the outputs must be the same bytes. This process's
    exec types and the child's (as printed)."""
    g = Graph(3)
    path = g.save_attention(tmp_path / "m.onnx", 1, 197, 3, 64, style, None)
    x = g.rng.standard_normal((1, 197, 192)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    got, types = run(path, {"x": x}, 2)
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_cpu_bf16_attn_split import run; "
            "from pathlib import Path; y, t = run(Path(sys.argv[1]), {'x': np.load(sys.argv[2])}, 2); "
            "np.save(sys.argv[2] + '.out.npy', y); print(repr(sorted(t.values())))")
    env = dict(os.environ, **{switch: "0"})
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(Path(__file__).parent)],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    np.testing.assert_array_equal(got, np.load(str(tmp_path / "x.npy") + ".out.npy"))
    return types, res.stdout


def check(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, str]:
    """Bit-exact at 2 threads (chunks) and 1 (unsplit); within bf16 rounding of ONNX Runtime f32
    (NaN rows where ONNX Runtime has them). The 2-thread exec types."""
    one, types1 = run(path, feeds, 1)
    two, types2 = run(path, feeds, 2)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_array_equal(two, one)
    np.testing.assert_array_equal(np.isnan(one), np.isnan(want))
    ok = ~np.isnan(want)
    err = float(np.abs(one[ok] - want[ok]).max(initial=0.0)) / max(float(np.abs(want[ok]).max(initial=0.0)), 1e-6)
    assert err < 3e-2, err
    assert not any("+attn" in t for t in types1.values()), types1
    return types2


def split_steps(types: dict[str, str]) -> list[str]:
    # (a Q x K^T fused into its P x V step, test_cpu_bf16_fused_attn.py, runs there as chunks)
    return sorted(n for n, t in types.items() if "+attn" in t or t == "fused_attention")


CASES = [  # (batch, sequence, heads, head dim, mask)
    (1, 197, 3, 64, None),        # deit: 3 heads cut into row blocks that share K^T / V
    (2, 128, 12, 32, "padding"),  # distilbert-like, a padding mask row per batch
    (1, 64, 2, 24, "causal"),     # GPT: the causal mask folded into P x V's softmax
    (2, 49, 3, 17, "dead_row"),   # odd head dim, a row masked all -inf
    (1, 7, 4, 16, "padding"),     # short: may stay on one thread (step_threads.cpp)
    (2, 1, 12, 8, None),          # a single query
]


@needs_bf16
@pytest.mark.parametrize("style", ["timm", "hf"])
@pytest.mark.parametrize(("b", "s", "h", "d", "mask"), CASES)
def test_attention_split_bit_exact(tmp_path: Path, style: str, b: int, s: int, h: int, d: int,
                                   mask: str | None) -> None:
    mshape, mv = masks(mask, b, s)
    g = Graph(b * 1000 + s * 10 + h)
    path = g.save_attention(tmp_path / "m.onnx", b, s, h, d, style, mshape)
    feeds = {"x": g.rng.standard_normal((b, s, h * d)).astype(np.float32)}
    if mv is not None:
        feeds["mask"] = mv
    types = check(path, feeds)
    if "amx" in "".join(types.values()) and s * s * h * b >= 3 * 197 * 197:
        assert len(split_steps(types)) == 2, types  # Q x K^T and P x V


@needs_bf16
def test_windows_split_in_batch_groups(tmp_path: Path) -> None:
    # Swin's windows: 64 windows x 3 heads of 49 x 32 with a relative position bias [1, 3, 49, 49]
    # added before the softmax: chunks of whole batches (groups of windows x heads)
    types = check(*save_windows(tmp_path, 7))
    if "amx" in "".join(types.values()):
        assert len(split_steps(types)) == 2, types


@needs_bf16
def test_attention_split_switch_off(tmp_path: Path) -> None:
    # OPFORGE_CPU_ATTN_SPLIT=0 (read once a process) keeps oneDNN's 2-thread primitive: a child
    # process compares its outputs and exec types with this one's
    types, off_types = compare_switched_off(tmp_path, "timm", "OPFORGE_CPU_ATTN_SPLIT")
    assert "+attn" not in off_types, off_types
    if "amx" in "".join(types.values()):
        assert len(split_steps(types)) == 2, types
