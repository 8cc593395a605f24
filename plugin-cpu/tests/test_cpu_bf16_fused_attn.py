"""A fused bf16 attention at 2 threads (stop 16): when attention's Q x K^T and the P x V that folds
the Softmax of its scores are both split into chunks (core/attn_split.cpp) and the scores have no
other reader, the executor gives the P x V step Q x K^T's kernel (nn.hpp fuse_attention). Q x K^T is
re-planned with P x V's chunking, so that chunk i of Q x K^T writes exactly the score rows chunk i
of P x V reads, and one parallel region runs both chunks in turn on the same thread: one fork/join
for the attention instead of two, the scores read back while they are in that thread's cache. The
P x V step's exec type says ``+fusedK``; the Q x K^T step is left doing nothing (``fused_attention``).
OPFORGE_CPU_FUSED_ATTN=0 turns it off. Each output element is the same f32 sum of the same bf16
products as in the unsplit primitives, so 2 threads are bit-exact against 1 and against the switch
off, and within bf16 rounding of ONNX Runtime's f32 (NaN rows where ONNX Runtime has them)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx_graph import TP, helper
from test_cpu_bf16_attn_split import (
    CASES,
    Graph,
    check,
    compare_switched_off,
    masks,
    needs_bf16,
    save_windows,
)


def fused(types: dict[str, str]) -> tuple[list[str], list[str]]:
    """The fused P x V steps and the Q x K^T steps they took, by node name."""
    return (sorted(n for n, t in types.items() if "+fused" in t),
            sorted(n for n, t in types.items() if t == "fused_attention"))


def big_on_amx(types: dict[str, str], b: int, s: int, h: int) -> bool:
    """Whether the attention is large enough that step_threads.cpp keeps both threads on it and
    oneDNN runs brgemm with AMX (the split's condition)."""
    return "amx" in "".join(types.values()) and s * s * h * b >= 3 * 197 * 197


@needs_bf16
@pytest.mark.parametrize("style", ["timm", "hf"])
@pytest.mark.parametrize(("b", "s", "h", "d", "mask"), CASES)
def test_fused_attention_bit_exact(tmp_path: Path, style: str, b: int, s: int, h: int, d: int,
                                   mask: str | None) -> None:
    mshape, mv = masks(mask, b, s)
    g = Graph(b * 1000 + s * 10 + h + 5)
    path = g.save_attention(tmp_path / "m.onnx", b, s, h, d, style, mshape)
    feeds = {"x": g.rng.standard_normal((b, s, h * d)).astype(np.float32)}
    if mv is not None:
        feeds["mask"] = mv
    types = check(path, feeds)
    pv, qk = fused(types)
    assert len(pv) == len(qk) <= 1, types
    if big_on_amx(types, b, s, h) and (mask is None or b == 1):
        # (a padding mask per batch, [B, 1, 1, S] with B > 1, stays an Add step between the two
        # MatMuls: P x V's scores are then not Q x K^T's result, nothing to fuse)
        assert len(pv) == 1, types


@needs_bf16
def test_fused_windows_with_position_bias(tmp_path: Path) -> None:
    # Swin's windows: 64 windows x 3 heads of 49 x 32 with a relative position bias [1, 3, 49, 49]
    # added before the softmax: chunks of whole batches (groups of windows x heads)
    types = check(*save_windows(tmp_path, 11))
    if "amx" in "".join(types.values()):
        assert len(fused(types)[0]) == 1, types


@needs_bf16
def test_scores_read_twice_not_fused(tmp_path: Path) -> None:
    # the scores are a model output too: Q x K^T must write them, so its step stays its own
    b, s, h, d = 1, 197, 3, 64
    g = Graph(13)
    e = h * d

    def heads(order: list[int]) -> str:
        return g.node("Transpose", [g.node("Reshape", [g.proj("x", e, e), g.shape([b, s, h, d])])], perm=order)

    q, k, v = heads([0, 2, 1, 3]), heads([0, 2, 3, 1]), heads([0, 2, 1, 3])
    scores = g.node("Mul", [g.node("MatMul", [q, k]), g.const(np.float32(d ** -0.5))])
    o = g.node("Transpose", [g.node("MatMul", [g.node("Softmax", [scores], axis=-1), v])], perm=[0, 2, 1, 3])
    out = g.node("Reshape", [o, g.shape([b, s, e])])
    path = g.save_model(tmp_path / "m.onnx", [helper.make_tensor_value_info("x", TP.FLOAT, (b, s, e))],
                        [out, scores], 14)
    x = g.rng.standard_normal((b, s, e)).astype(np.float32)
    types = check(path, {"x": x})
    assert fused(types) == ([], []), types


@needs_bf16
def test_fused_attention_switch_off(tmp_path: Path) -> None:
    # OPFORGE_CPU_FUSED_ATTN=0 (read once a process) keeps the two split steps: a child process
    # compares its outputs and exec types with this one's
    types, off_types = compare_switched_off(tmp_path, "hf", "OPFORGE_CPU_FUSED_ATTN")
    assert "+fused" not in off_types and "fused_attention" not in off_types, off_types
    if "amx" in "".join(types.values()):
        assert len(fused(types)[0]) == 1, types


@needs_bf16
def test_fused_attention_reads_model_inputs(tmp_path: Path) -> None:
    # Q, K and V are the model's inputs, read where the caller has them: the fused step rebinds
    # Q x K^T's views to the new arrays of every inference (infer_twice runs other data between)
    b, h, s, d = 1, 3, 197, 64
    g = Graph(17)
    scores = g.node("Mul", [g.node("MatMul", ["q", g.node("Transpose", ["k"], perm=[0, 1, 3, 2])]),
                            g.const(np.float32(d ** -0.5))])
    out = g.node("Transpose", [g.node("MatMul", [g.node("Softmax", [scores], axis=-1), "v"])], perm=[0, 2, 1, 3])
    ins = [helper.make_tensor_value_info(n, TP.FLOAT, (b, h, s, d)) for n in ("q", "k", "v")]
    path = g.save_model(tmp_path / "m.onnx", ins, [out], 14)
    feeds = {n: g.rng.standard_normal((b, h, s, d)).astype(np.float32) for n in ("q", "k", "v")}
    types = check(path, feeds)
    if "amx" in "".join(types.values()):
        assert len(fused(types)[0]) == 1, types


@needs_bf16
@pytest.mark.parametrize("d", [64, 17])
def test_q_scale_folded_into_scores(tmp_path: Path, d: int) -> None:
    # timm's q * scale before Q x K^T (taken before the head split by passes/qkv_split.py) is the
    # MatMul's scale post-op (emit.py _folded_prescale): no Multiply step; exact for 1/8, within
    # bf16 rounding of ONNX Runtime for 17 ** -0.5
    g = Graph(19 + d)
    path = g.save_attention(tmp_path / "m.onnx", 1, 50, 2, d, "timm", None)
    types = check(path, {"x": g.rng.standard_normal((1, 50, 2 * d)).astype(np.float32)})
    assert not any(n.endswith("/Multiply") or "Multiply/" in n for n in types), types
