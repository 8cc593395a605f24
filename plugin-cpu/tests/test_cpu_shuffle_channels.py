"""ShuffleNet's channel shuffle (Concat -> Reshape [N, g, C/g, H, W] -> Transpose [0, 2, 1, 3, 4]
-> Reshape [N, C, H, W] -> optional Split of the channels) runs as one ShuffleChannels step
(passes/shuffle_channels.py, csrc/kernels/shuffle_channels.cpp) that reads the branches in the
layout their convolutions wrote and writes the parts directly. onnx.helper models against ONNX
Runtime: g = 2 and 3, odd H/W, with and without the split, branches in nhwc (convolutions) or
plain (a Sigmoid of the input), parts read by convolutions (nhwc out) or by the caller (nchw out),
f32 and bf16, 1 and 2 threads; near-misses of the pattern keep their steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

native_bf16 = bool(load_core().native_bf16())


class Graph(OnnxGraph):
    def node(self, op: str, ins: list[str], n_out: int = 1, **attrs: Any) -> list[str]:  # type: ignore[override]
        return self.node_outs(op, ins, n_out, **attrs)  # every output, as a list (Split's several)

    def conv(self, x: str, cin: int, cout: int) -> str:
        w = self.const(self.rng.standard_normal((cout, cin, 1, 1)) * (2.0 / cin) ** 0.5)
        b = self.const(self.rng.standard_normal(cout) * 0.1)
        return self.node("Relu", [self.node("Conv", [x, w, b])[0]])[0]

    def save(self, path: Path, x_shape: tuple[int, ...], outs: list[str], opset: int = 13) -> Path:
        return super().save(path, x_shape, outs, opset)


def shuffle_model(path: Path, *, g: int, branches: list[int], hw: tuple[int, int], split: bool, readers: str,
                  source: str = "conv", perm: tuple[int, ...] = (0, 2, 1, 3, 4), grouped: str = "5d",
                  cat_output: bool = False, flat: bool = False) -> Path:
    """x [2, max(8, branches), H, W] -> one branch per entry of ``branches`` (a 1x1 convolution + ReLU, or for
    ``source='plain'`` a Sigmoid of x's first channels) -> channel shuffle of ``g`` groups (the
    ONNX export of ShuffleNet) -> halves (``split``) or the whole; ``readers``: 'convs' (each part
    into a 1x1 convolution, the model outputs) or 'outputs' (the parts are the outputs).
    Near-misses: another ``perm``, ``grouped='4d'`` ([N, g, C/g, H*W]), the concatenation also a
    model output (``cat_output``), the last Reshape to [N, C, H*W] (``flat``)."""
    b = Graph(len(branches) * 10 + g)
    n, (h, w), cin = 2, hw, max(8, *branches)
    if source == "conv":
        parts = [b.conv("x", cin, c) for c in branches]
    else:
        parts = [b.node("Sigmoid", [b.node("Slice", ["x", b.const([0], np.int64), b.const([c], np.int64),
                                                      b.const([1], np.int64)])[0]])[0] for c in branches]
    c = sum(branches)
    cat = b.node("Concat", parts, axis=1)[0]
    shape5 = [n, g, c // g, h, w] if grouped == "5d" else [n, g, c // g, h * w]
    r1 = b.node("Reshape", [cat, b.const(shape5, np.int64)])[0]
    t = b.node("Transpose", [r1], perm=list(perm if grouped == "5d" else (0, 2, 1, 3)))[0]
    r2 = b.node("Reshape", [t, b.const([n, c, h * w] if flat else [n, c, h, w], np.int64)])[0]
    outs = b.node("Split", [r2, b.const([c // 2, c - c // 2], np.int64)], 2, axis=1) if split else [r2]
    if readers == "convs" and not flat:
        outs = [b.conv(o, c // 2 if split else c, 6) for o in outs]
    if cat_output:
        outs.append(cat)
    return b.save(path, (n, cin, h, w), outs)


def run(path: Path, precision: str, threads: int) -> tuple[list[np.ndarray], list[np.ndarray], list[Any]]:
    x = np.random.default_rng(3).standard_normal(tuple(d.dim_value for d in onnx.load(str(path)).graph.input[0]
                                                       .type.tensor_type.shape.dim)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": precision})
    req = compiled.create_infer_request()
    res = req.infer({"x": x})
    got = [np.asarray(res[i]) for i in range(len(want))]
    req.infer({"x": x * 0.5})  # a second run with other data reads the same buffers
    again = req.infer({"x": x})
    for i, g in enumerate(got):
        np.testing.assert_array_equal(np.asarray(again[i]), g, err_msg=f"output {i}, second run")
    return got, want, [r for r in req.get_profiling_info() if r.status == "EXECUTED"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("g", "branches", "hw"), [(2, [8, 8], (7, 9)), (2, [24, 24], (5, 5)), (3, [6, 6, 6], (3, 5)),
                                                  (3, [9, 9], (9, 7))])
@pytest.mark.parametrize("split", [True, False])
@pytest.mark.parametrize(("source", "readers"), [("conv", "convs"), ("conv", "outputs"), ("plain", "convs")])
def test_shuffle_is_one_step_f32(tmp_path: Path, g: int, branches: list[int], hw: tuple[int, int], split: bool,
                                 source: str, readers: str, threads: int) -> None:
    if split and sum(branches) % 2:
        pytest.skip("odd channel count")
    path = shuffle_model(tmp_path / "m.onnx", g=g, branches=branches, hw=hw, split=split, readers=readers, source=source)
    got, want, rows = run(path, "f32", threads)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.shape == b.shape, (i, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4, err_msg=f"output {i}")
    ran = [r.node_type for r in rows]
    assert ran.count("ShuffleChannels") == 1, ran
    assert not {"Concat", "Transpose", "Split", "VariadicSplit", "Reshape"} & set(ran), ran
    (row,) = [r for r in rows if r.node_type == "ShuffleChannels"]
    if source == "conv":  # the convolutions' nhwc outputs read as they are
        assert row.exec_type.startswith("shuffle:nhwc"), row.exec_type
        assert row.exec_type == ("shuffle:nhwc" if readers == "convs" else "shuffle:nhwc_to_nchw"), row.exec_type
        assert "Reorder" not in ran[:ran.index("ShuffleChannels")], ran


@pytest.mark.skipif(not native_bf16, reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("g", "branches", "hw", "split", "readers"), [
    (2, [16, 16], (7, 9), True, "convs"), (2, [16, 16], (7, 9), False, "convs"), (3, [12, 12, 12], (5, 3), True, "convs"),
    (2, [16, 16], (5, 5), True, "outputs")])
def test_shuffle_bf16(tmp_path: Path, g: int, branches: list[int], hw: tuple[int, int], split: bool, readers: str,
                      threads: int) -> None:
    path = shuffle_model(tmp_path / "m.onnx", g=g, branches=branches, hw=hw, split=split, readers=readers)
    got, want, rows = run(path, "bf16", threads)
    f32, _, _ = run(path, "f32", threads)
    for i, (a, b, f) in enumerate(zip(got, want, f32, strict=True)):
        np.testing.assert_allclose(a, b, rtol=3e-2, atol=3e-2 * float(np.abs(b).max()), err_msg=f"output {i}")
        np.testing.assert_allclose(f, b, rtol=1e-4, atol=1e-4, err_msg=f"output {i} (f32)")
    (row,) = [r for r in rows if r.node_type == "ShuffleChannels"]
    # parts read only by bf16 convolutions stay bf16, nhwc; parts the caller reads are f32 nchw
    # (the convolutions before then write f32 nhwc)
    want_exec = "shuffle:nhwc_bf16" if readers == "convs" else "shuffle:nhwc_to_nchw"
    assert row.exec_type == want_exec, row.exec_type


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("miss", ["perm", "4d", "cat_output", "flat"])
def test_near_misses_stay_unfused(tmp_path: Path, miss: str, threads: int) -> None:
    kw: dict[str, Any] = {"perm": {"perm": (0, 2, 1, 4, 3)}, "4d": {"grouped": "4d"}, "cat_output": {"cat_output": True},
                          "flat": {"flat": True}}[miss]
    path = shuffle_model(tmp_path / "m.onnx", g=2, branches=[8, 8], hw=(5, 5), split=miss != "flat", readers="convs", **kw)
    got, want, rows = run(path, "f32", threads)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4, err_msg=f"output {i}")
    ran = [r.node_type for r in rows]
    assert "ShuffleChannels" not in ran and "Transpose" in ran, ran
