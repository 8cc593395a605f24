"""Under the bf16 hint a LayerNorm (MVN with its gamma/beta tail) or an RMSNorm whose every reader
is a bf16 MatMul with constant weights writes its output in bf16 (emit.py _bf16_norm_output), and
a post-LN block's LayerNorm, also read as the residual of a later MatMul, writes a bf16 copy
besides its f32 output (_bf16_norm_copy): the next projections read bf16 as it is instead of
each converting the f32 tensor, the residual stays f32. Transformer blocks built with
onnx.helper: post-LN BERT-like, pre-LN ViT-like, pre-RMSNorm T5-like, against f32 within bf16
rounding, and bit for bit against the same block whose first norm output is also a model output
(so it stays f32 and the MatMuls round it themselves: only the place of the one rounding moves),
with NaN/inf rows where f32 has them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
helper, numpy_helper = onnx.helper, onnx.numpy_helper

pytestmark = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")

SEQ, DIM, HEADS, FF = 20, 64, 4, 128


class Graph:
    """onnx.helper nodes and seeded initializers."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(5)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def const(self, v: Any, dtype: Any = np.float32) -> str:
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(v, dtype), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        out = f"t{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def dense(self, x: str, cin: int, cout: int) -> str:
        w = self.const(self.rng.standard_normal((cin, cout)) / cin**0.5)
        return self.op("Add", [self.op("MatMul", [x, w]), self.const(self.rng.standard_normal(cout) * 0.1)])

    def layer_norm(self, x: str) -> str:
        g = self.const(self.rng.uniform(0.5, 1.5, DIM))
        return self.op("LayerNormalization", [x, g, self.const(self.rng.standard_normal(DIM) * 0.1)], axis=-1,
                       epsilon=1e-5)

    def rms_norm(self, x: str) -> str:  # T5's: x / sqrt(mean(x^2) + eps) * weight
        var = self.op("ReduceMean", [self.op("Pow", [x, self.const(2.0)])], axes=[-1], keepdims=1)
        h = self.op("Div", [x, self.op("Sqrt", [self.op("Add", [var, self.const(1e-6)])])])
        return self.op("Mul", [h, self.const(self.rng.uniform(0.5, 1.5, DIM))])

    def attention(self, x: str) -> str:
        d = DIM // HEADS
        split = self.const([1, SEQ, HEADS, d], np.int64)

        def heads(t: str, perm: list[int]) -> str:
            return self.op("Transpose", [self.op("Reshape", [t, split])], perm=perm)

        q = heads(self.dense(x, DIM, DIM), [0, 2, 1, 3])
        k = heads(self.dense(x, DIM, DIM), [0, 2, 3, 1])
        v = heads(self.dense(x, DIM, DIM), [0, 2, 1, 3])
        scores = self.op("Div", [self.op("MatMul", [q, k]), self.const(d**0.5)])
        ctx = self.op("MatMul", [self.op("Softmax", [scores], axis=-1), v])
        merged = self.op("Reshape", [self.op("Transpose", [ctx], perm=[0, 2, 1, 3]),
                                     self.const([1, SEQ, DIM], np.int64)])
        return self.dense(merged, DIM, DIM)

    def ffn(self, x: str) -> str:
        h = self.dense(x, DIM, FF)
        h = self.op("Mul", [self.op("Mul", [h, self.const(0.5)]),
                            self.op("Add", [self.op("Erf", [self.op("Div", [h, self.const(2**0.5)])]),
                                            self.const(1.0)])])
        return self.dense(h, FF, DIM)


def build(path: Path, kind: str, norm_out: bool = False) -> Path:
    """``kind``: post_ln_ffn (LN, then LN(h + ffn(h))), post_ln (BERT: LN(x + attn(x)), LN(h + ffn(h)) after an embedding LN), pre_ln
    (ViT: x + attn(LN(x)), h + ffn(LN(h)), a final LN), t5 (the pre-norm block with RMSNorm).
    ``norm_out``: the first block's first norm is also a model output (it then stays f32)."""
    g = Graph()
    outs: list[str] = []
    if kind == "post_ln_ffn":  # rows stay independent: a NaN row stays one row
        x = g.layer_norm("x")
        first = x
        y = g.layer_norm(g.op("Add", [g.ffn(x), x]))
    elif kind == "post_ln":
        x = g.layer_norm("x")
        first = x
        x = g.layer_norm(g.op("Add", [g.attention(x), x]))
        y = g.layer_norm(g.op("Add", [g.ffn(x), x]))
    else:
        norm = g.rms_norm if kind == "t5" else g.layer_norm
        first = norm("x")
        x = g.op("Add", ["x", g.attention(first)])
        x = g.op("Add", [x, g.ffn(norm(x))])
        y = norm(x)
    outs.append(y)
    if norm_out:
        outs.append(first)
    shape = [1, SEQ, DIM]
    graph = helper.make_graph(g.nodes, kind, [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, shape) for o in outs],
                              g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def feed() -> np.ndarray:
    return np.random.default_rng(9).standard_normal((1, SEQ, DIM)).astype(np.float32) * 2


def run(path: Path, x: np.ndarray, precision: str, threads: int) -> tuple[list[np.ndarray], list[Any]]:
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU",
                                  {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads,
                                   "ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    got = [np.asarray(o) for o in req.infer({"x": x}).to_tuple()]
    return got, [r for r in req.get_profiling_info() if r.status == "EXECUTED"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", ["post_ln", "pre_ln", "t5"])
def test_norm_writes_bf16_for_its_projections(tmp_path: Path, kind: str, threads: int) -> None:
    path = build(tmp_path / "m.onnx", kind)
    x = feed()
    (got,), rows = run(path, x, "bf16", threads)
    (want,), _ = run(path, x, "f32", threads)
    assert got.dtype == np.float32 and np.isfinite(got).all()
    # within bf16's reach of f32 (the outputs are normalised rows: |y| ~ 1)
    assert np.abs(got.astype(np.float64) - want).max() < 0.1
    assert np.abs(got.astype(np.float64) - want).mean() < 1e-2
    norms = [r for r in rows if r.node_type in ("MVN", "RMSNormalization")]
    bf16_norms = [r for r in norms if ":bf16" in r.exec_type]
    # every norm but the last one (the model output) is read only by projections/residuals
    assert len(norms) == 3 and len(bf16_norms) == 2, [(r.node_name, r.exec_type) for r in norms]
    # and nothing converts them back: no Reorder step anywhere
    assert not [r for r in rows if r.node_type == "Reorder"], [r.node_name for r in rows]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", ["post_ln", "pre_ln", "t5"])
def test_bf16_norm_output_is_the_converted_f32_one(tmp_path: Path, kind: str, threads: int) -> None:
    # a norm output read by the projections (and a post-LN one as a residual, which stays f32):
    # rounding it in the norm (bf16 output or copy) or in the MatMuls' source conversion (an f32
    # output, as when it is also a model output) is the same round to nearest even of the same
    # f32 values
    x = feed()
    (got,), _ = run(build(tmp_path / "a.onnx", kind), x, "bf16", threads)
    (kept, first), rows = run(build(tmp_path / "b.onnx", kind, norm_out=True), x, "bf16", threads)
    np.testing.assert_array_equal(got, kept)
    assert first.dtype == np.float32
    # (a model output keeps that norm f32, with no copy)
    assert ":bf16" not in next(r.exec_type for r in rows if r.node_type in ("MVN", "RMSNormalization"))


def test_nan_and_inf_rows_of_a_post_ln_ffn(tmp_path: Path) -> None:
    # the LayerNorm's bf16 copy (NaN kept by the rounding) read by the FFN, its f32 output as the
    # residual:
    # the NaN row and the inf row (LayerNorm of inf is NaN) stay NaN, every other row is finite
    # and within bf16's reach of f32
    path = build(tmp_path / "m.onnx", "post_ln_ffn")
    x = feed()
    x[0, 3, 5] = np.nan
    x[0, 7, 1] = np.inf
    (got,), rows = run(path, x, "bf16", 2)
    (want,), _ = run(path, x, "f32", 2)
    assert next(r.exec_type for r in rows if r.node_type == "MVN").startswith("layer_norm:bf16_copy:")
    bad = np.zeros(SEQ, bool)
    bad[[3, 7]] = True
    assert np.isnan(want[0, bad]).all() and np.isnan(got[0, bad]).all()
    assert np.isfinite(want[0, ~bad]).all() and np.isfinite(got[0, ~bad]).all()
    assert np.abs(got[0, ~bad].astype(np.float64) - want[0, ~bad]).max() < 0.1


@pytest.mark.parametrize("kind", ["post_ln", "pre_ln", "t5"])
def test_nan_and_inf_rows_stay_where_f32_has_them(tmp_path: Path, kind: str) -> None:
    path = build(tmp_path / "m.onnx", kind)
    x = feed()
    x[0, 3, 5] = np.nan
    x[0, 7, 1] = np.inf
    (got,), _ = run(path, x, "bf16", 2)
    (want,), _ = run(path, x, "f32", 2)
    # (attention spreads a NaN row over every row it attends from: the same in both)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    assert np.isnan(want).any()
