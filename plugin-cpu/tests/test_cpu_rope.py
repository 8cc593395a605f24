"""A decoder's rotary position embedding, as torch exports Llama's (full rotary) and GPT-NeoX's
(partial rotary, Q/K/V sliced out of one projection), runs as one RoPE step (passes/rope.py,
ops/rope.py, csrc/kernels/rope.cpp) that reads the heads before their Transpose. onnx.helper
models against ONNX Runtime and the op's NumPy reference: constant cos/sin and cos/sin computed from
position ids at run time, one and two batches, f32 and bf16, 1 and 2 threads; near-misses of the
pattern keep their steps and their numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge.errors import ShapeInferenceError
from opforge.graph import Node
from opforge.opset.parameter import Parameter
from opforge_cpu._loader import load_core
from opforge_cpu.ops.rope import RoPE, RoPEAttrs

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

native_bf16 = bool(load_core().native_bf16())
BIG = 9223372036854775807  # torch's open slice end


class Graph(OnnxGraph):
    def slice_last(self, x: str, start: int, end: int, bounds: str = "const") -> str:
        if bounds == "runtime":  # the stop is the model input ``stop`` [1] (int64): known only at run time
            return self.node("Slice", [x, self.const([start], np.int64), "stop", self.const([-1], np.int64)])
        return self.node("Slice", [x, self.const([start], np.int64), self.const([end], np.int64),
                                   self.const([3], np.int64), self.const([1], np.int64)])

    def rotate(self, x: str, r: int, cos: str, sin: str, miss: str = "") -> str:
        """x * cos + cat(-x[..., r/2:], x[..., :r/2]) * sin, as torch's apply_rotary_pos_emb exports it;
        ``miss`` makes one near-miss of it."""
        half = r // 2 + (1 if miss == "split" else 0)
        x1 = self.slice_last(x, 0, half, "runtime" if miss == "bounds" else "const")
        x2 = self.slice_last(x, half, BIG) if miss != "bounds" else \
            self.node("Slice", [x, "stop", self.const([BIG], np.int64), self.const([-1], np.int64)])
        if miss == "other_half":
            turned = self.node("Concat", [x2, self.node("Neg", [x1])], axis=-1)
        elif miss == "no_neg":
            turned = self.node("Concat", [x2, x1], axis=-1)
        else:
            turned = self.node("Concat", [self.node("Neg", [x2]), x1], axis=-1)
        a = self.node("Mul", [x, cos])
        b = self.node("Mul", [turned, sin])
        return self.node("Sub" if miss == "sub" else "Add", [a, b])



def cos_sin(g: Graph, s: int, r: int, source: str, batch: int) -> tuple[str, str]:
    """[1 or B, 1, S, R] cos and sin: constants (Llama's export) or Cos/Sin of position ids x
    inverse frequencies at run time (the model input ``pos`` [B, S], int64)."""
    inv = 1.0 / (10000 ** (np.arange(0, r, 2, dtype=np.float64) / r))
    if source == "const":
        ang = np.arange(s)[:, None] * inv[None, :]
        emb = np.concatenate([ang, ang], axis=-1)[None, None].astype(np.float32)
        return g.const(np.cos(emb)), g.const(np.sin(emb))
    pos = g.node("Cast", ["pos"], to=TP.FLOAT)  # [B, S]
    ang = g.node("Mul", [g.node("Unsqueeze", [pos, g.const([2], np.int64)]), g.const(inv[None, None, :])])
    emb = g.node("Unsqueeze", [g.node("Concat", [ang, ang], axis=-1), g.const([1], np.int64)])  # [B, 1, S, R]
    return g.node("Cos", [emb]), g.node("Sin", [emb])


def llama_model(path: Path, *, batch: int = 1, s: int = 12, heads: int = 4, d: int = 16, source: str = "const",
                miss: str = "", x_output: bool = False) -> Path:
    """h [B, S, E] -> q/k projections -> Reshape [B, S, H, D] -> Transpose [0, 2, 1, 3] -> RoPE (full
    rotary); outputs: q_rot, k_rot (and the transposed q itself with ``x_output``)."""
    g = Graph(7)
    e = heads * d
    cos, sin = cos_sin(g, s, d, source, batch)
    outs = []
    for _ in range(2):
        w = g.const(g.rng.standard_normal((e, e)) / np.sqrt(e))
        proj = g.node("Reshape", [g.node("MatMul", ["h", w]), g.const([batch, s, heads, d], np.int64)])
        x = g.node("Transpose", [proj], perm=[0, 2, 1, 3])
        outs.append(g.rotate(x, d, cos, sin, miss))
        if x_output:
            outs.append(x)
    inputs = [helper.make_tensor_value_info("h", TP.FLOAT, [batch, s, e])]
    if source != "const":
        inputs.append(helper.make_tensor_value_info("pos", TP.INT64, [batch, s]))
    if miss == "bounds":
        inputs.append(helper.make_tensor_value_info("stop", TP.INT64, [1]))
    return g.save_model(path, inputs, outs, 17, "rope")


def neox_model(path: Path, *, batch: int = 1, s: int = 12, heads: int = 4, d: int = 16, r: int = 4,
               source: str = "const", miss: str = "", attention: bool = False) -> Path:
    """GPT-NeoX: h -> one QKV projection -> Reshape [B, S, H, 3 D] -> Transpose -> Q, K, V as column
    Slices -> partial rotary of Q and K (the first ``r`` columns) concatenated with their tails;
    outputs: Q, K, and V, or with ``attention`` softmax(Q K^T) V alone."""
    g = Graph(11)
    e = heads * d
    cos, sin = cos_sin(g, s, r, source, batch)
    w = g.const(g.rng.standard_normal((e, 3 * e)) / np.sqrt(e))
    qkv = g.node("Reshape", [g.node("MatMul", ["h", w]), g.const([batch, s, heads, 3 * d], np.int64)])
    t = g.node("Transpose", [qkv], perm=[0, 2, 1, 3])
    outs = []
    for i in range(2):
        x = g.slice_last(t, i * d, (i + 1) * d)
        rot = g.slice_last(x, 0, r)
        tail = g.slice_last(x, r + (1 if miss == "tail" else 0), BIG)
        outs.append(g.node("Concat", [g.rotate(rot, r, cos, sin, miss), tail], axis=-1))
    outs.append(g.slice_last(t, 2 * d, 3 * d))
    if attention:
        scores = g.node("MatMul", [outs[0], g.node("Transpose", [outs[1]], perm=[0, 1, 3, 2])])
        outs = [g.node("MatMul", [g.node("Softmax", [scores], axis=-1), outs[2]])]
    inputs = [helper.make_tensor_value_info("h", TP.FLOAT, [batch, s, e])]
    if source != "const":
        inputs.append(helper.make_tensor_value_info("pos", TP.INT64, [batch, s]))
    return g.save_model(path, inputs, outs, 17, "rope")


def feeds_for(path: Path, shape_half: int = 8) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    out: dict[str, np.ndarray] = {}
    for i in onnx.load(str(path)).graph.input:
        shape = tuple(d.dim_value for d in i.type.tensor_type.shape.dim)
        if i.name == "stop":  # the runtime slice bound of the near-miss: the right one, R / 2
            out[i.name] = np.array([shape_half], np.int64)
        elif i.name == "pos":  # position ids, each batch its own offset (a cache of past tokens)
            out[i.name] = (np.arange(shape[1])[None, :] + 3 * np.arange(shape[0])[:, None]).astype(np.int64)
        else:
            out[i.name] = rng.standard_normal(shape).astype(np.float32)
    return out


def run(path: Path, precision: str, threads: int, half: int = 8) -> tuple[list[np.ndarray], list[np.ndarray], list[Any]]:
    feeds = feeds_for(path, half)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": precision})
    req = compiled.create_infer_request()
    res = req.infer(feeds)
    got = [np.asarray(res[i]).copy() for i in range(len(want))]
    req.infer({k: v * 0.5 if v.dtype == np.float32 else v for k, v in feeds.items()})
    again = req.infer(feeds)  # a second run after other data reads the same buffers
    for i, g in enumerate(got):
        np.testing.assert_array_equal(np.asarray(again[i]), g, err_msg=f"output {i}, second run")
    return got, want, [r for r in req.get_profiling_info() if r.status == "EXECUTED"]


def rope_rows(rows: list[Any]) -> list[Any]:
    return [r for r in rows if r.node_type == "RoPE"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("batch", "source"), [(1, "const"), (2, "const"), (2, "positions")])
def test_llama_rope_is_one_step(tmp_path: Path, batch: int, source: str, threads: int) -> None:
    path = llama_model(tmp_path / "m.onnx", batch=batch, source=source)
    got, want, rows = run(path, "f32", threads)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.shape == b.shape, (i, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"output {i}")
    ran = [r.node_type for r in rows]
    assert len(rope_rows(rows)) == 2, ran
    # (the run-time cos/sin have a Concat of their own)
    assert not ({"Transpose", "Negative", "Add"} | ({"Concat"} if source == "const" else set())) & set(ran), ran
    assert all(r.exec_type == "rope:bshd" for r in rope_rows(rows)), [r.exec_type for r in rope_rows(rows)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("batch", "source", "r"), [(1, "const", 4), (2, "positions", 8), (1, "const", 16)])
def test_neox_partial_rope_is_one_step(tmp_path: Path, batch: int, source: str, r: int, threads: int) -> None:
    path = neox_model(tmp_path / "m.onnx", batch=batch, source=source, r=r)
    got, want, rows = run(path, "f32", threads)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.shape == b.shape, (i, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"output {i}")
    found = rope_rows(rows)
    assert len(found) == 2, [x.node_type for x in rows]
    want_exec = "rope:bshd_partial" if r < 16 else "rope:bshd"
    assert all(x.exec_type == want_exec for x in found), [x.exec_type for x in found]
    assert not ({"Negative", "Add"} | ({"Concat"} if source == "const" else set())) & {x.node_type for x in rows}, \
        [x.node_type for x in rows]


@pytest.mark.parametrize("threads", [1, 2])
def test_neox_v_slice_before_its_transpose(tmp_path: Path, threads: int) -> None:
    """With Q and K read by their RoPEs, V's column Slice is taken of the [B, S, H, 3 D] projection
    (passes/head_slice.py) and its head split folds into P x V: no Transpose step is left."""
    path = neox_model(tmp_path / "m.onnx", batch=2, attention=True)
    got, want, rows = run(path, "f32", threads)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    ran = [x.node_type for x in rows]
    assert ran.count("RoPE") == 2 and "Transpose" not in ran, ran


@pytest.mark.skipif(not native_bf16, reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("model", ["llama", "neox"])
def test_rope_bf16(tmp_path: Path, model: str, threads: int) -> None:
    """Under the bf16 hint the projections run in bf16; the RoPE step computes in f32 between them."""
    path = (llama_model if model == "llama" else neox_model)(tmp_path / "m.onnx", batch=2, source="positions")
    got, want, rows = run(path, "bf16", threads)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(a, b, rtol=3e-2, atol=3e-2 * float(np.abs(b).max()), err_msg=f"output {i}")
    assert len(rope_rows(rows)) == 2, [x.node_type for x in rows]


@pytest.mark.parametrize("miss", ["split", "other_half", "no_neg", "sub"])
def test_llama_near_misses_stay_unfused(tmp_path: Path, miss: str) -> None:
    path = llama_model(tmp_path / "m.onnx", miss=miss)
    got, want, rows = run(path, "f32", 1)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"output {i}")
    assert not rope_rows(rows), [x.node_type for x in rows]


@pytest.mark.parametrize("half", [8, 7])
def test_run_time_slice_bound(tmp_path: Path, half: int) -> None:
    """rotate_half's split point is a model input: the CPU plans each of its values on its own, the
    bound a constant there; the right one (R / 2 = 8) fuses, another (7) keeps its steps."""
    path = llama_model(tmp_path / "m.onnx", miss="bounds")
    got, want, rows = run(path, "f32", 1, half)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"output {i}")
    assert len(rope_rows(rows)) == (2 if half == 8 else 0), [x.node_type for x in rows]


def test_neox_wrong_tail_stays_unfused(tmp_path: Path) -> None:
    """The tail concatenated back from column R + 1 (one column lost): not GPT-NeoX's partial
    rotary; the rotary part alone still fuses (its Concat with that tail stays a step)."""
    path = neox_model(tmp_path / "m.onnx", miss="tail")
    got, want, rows = run(path, "f32", 1)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.shape == b.shape, (i, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"output {i}")
    assert {x.exec_type for x in rope_rows(rows)} <= {"rope:bhsd"}, [x.exec_type for x in rope_rows(rows)]
    assert "Concat" in {x.node_type for x in rows}


def test_head_read_elsewhere_keeps_its_transpose(tmp_path: Path) -> None:
    """The transposed heads are also a model output: the RoPE still reads the projection's
    [B, S, H, D], the Transpose stays for the output."""
    path = llama_model(tmp_path / "m.onnx", x_output=True)
    got, want, rows = run(path, "f32", 1)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"output {i}")
    assert len(rope_rows(rows)) == 2


@pytest.mark.parametrize(("layout", "offset", "d", "r", "cb"), [("bhsd", 0, 8, 8, 1), ("bshd", 16, 16, 4, 2),
                                                                ("bshd", 0, 16, 16, 1)])
def test_reference_is_rotate_half(layout: str, offset: int, d: int, r: int, cb: int) -> None:
    """The op's NumPy reference against the textbook formula."""
    rng = np.random.default_rng(1)
    b, h, s, w = 2, 3, 5, 48
    x = rng.standard_normal((b, s, h, w) if layout == "bshd" else (b, h, s, w)).astype(np.float32)
    cos, sin = (rng.standard_normal((cb, 1, s, r)).astype(np.float32) for _ in range(2))
    attrs = RoPEAttrs(rotary_dims=r, head_size=d, input_layout=layout, column_offset=offset)  # type: ignore[arg-type]
    (y,) = RoPE.evaluate(attrs, [x, cos, sin])
    xh = (x.transpose(0, 2, 1, 3) if layout == "bshd" else x)[..., offset:offset + d]
    x1, x2 = xh[..., :r // 2], xh[..., r // 2:r]
    want = np.concatenate([xh[..., :r] * cos + np.concatenate([-x2, x1], -1) * sin, xh[..., r:]], -1)
    np.testing.assert_array_equal(y, want)
    assert y.shape == (b, h, s, d)


@pytest.mark.parametrize(("x", "cos", "attrs", "match"), [
    ((1, 4, 12, 16), (1, 1, 12, 8), {}, r"cos \(1, 1, 12, 8\) and sin \(1, 1, 12, 8\): expected one shape \[1 or 1, 1, 12, 16\]"),
    ((1, 4, 12, 16), (1, 1, 12, 16), {"rotary_dims": 5}, r"rotary_dims 5 is not an even count of 2 to head_size 16"),
    ((1, 12, 4, 48), (1, 1, 12, 16), {"input_layout": "bshd", "column_offset": 40},
     r"columns \[40, 56\) do not fit input 0's last axis of 48"),
])
def test_rope_refuses_bad_inputs(x: tuple[int, ...], cos: tuple[int, ...], attrs: dict[str, Any], match: str) -> None:
    """A RoPE node whose inputs do not fit its attributes is refused with the node and the shapes named."""
    ins = [Node.create(Parameter, [], {"element_type": "f32", "shape": list(s)}, name=n)
           for n, s in (("x", x), ("cos", cos), ("sin", cos))]
    full = {"rotary_dims": 16, "head_size": 16} | attrs
    with pytest.raises(ShapeInferenceError, match=r"node 'rope' \(RoPE\): " + match):
        Node.create(RoPE, [i.output(0) for i in ins], full, name="rope")
