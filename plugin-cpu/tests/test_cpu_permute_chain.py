"""A chain of Reshapes and 2+ Transposes runs as one Transpose between Reshapes
(passes/permute_chain.py): MobileViT's unfold (a convolution's output read channels-last through
one reorder, then whole rows of C moved) and fold (ending in a channels-last view the next
convolution reads as it is). onnx.helper models against ONNX Runtime, f32 and bf16, 1 and 2
threads, the switch OPFORGE_CPU_PERMUTE_CHAIN=0 bit-exact with the pass; chains that are not a
permutation of whole factors, cancel out, or feed a MatMul."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge_cpu._loader import load_core
from opforge_cpu.passes.permute_chain import compose

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

native_bf16 = bool(load_core().native_bf16())


class Graph(OnnxGraph):
    def conv(self, x: str, cin: int, cout: int) -> str:
        w = self.const(self.rng.standard_normal((cout, cin, 1, 1)) * (2.0 / cin) ** 0.5)
        return self.node("Conv", [x, w, self.const(self.rng.standard_normal(cout) * 0.1)])

    def reshape(self, x: str, shape: list[int]) -> str:
        return self.node("Reshape", [x, self.const(shape, np.int64)])


def mobilevit_model(path: Path, *, c: int, hw: tuple[int, int], source: str = "conv", out: str = "conv",
                    mid: str = "layernorm") -> Path:
    """x [1, 8, H, W] -> 1x1 convolution to C (``source='conv'``) or a Sigmoid of x's channels
    repeated to C ('plain') -> timm's unfold of 2x2 patches (the ONNX export) -> LayerNorm over C
    (``mid``) or a Relu -> the fold back -> a 1x1 convolution (``out='conv'``) or the model
    output ('output')."""
    b = Graph(c + hw[0])
    (h, w), ph, pw = hw, 2, 2
    nh, nw = h // ph, w // pw
    if source == "conv":
        y = b.conv("x", 8, c)
    else:
        y = b.node("Sigmoid", [b.node("Tile", ["x", b.const([1, c // 8, 1, 1], np.int64)])])
    y = b.reshape(y, [c * nh, ph, nw, pw])
    y = b.node("Transpose", [y], perm=[0, 2, 1, 3])
    y = b.reshape(y, [1, c, nh * nw, ph * pw])
    y = b.node("Transpose", [y], perm=[0, 3, 2, 1])
    y = b.reshape(y, [ph * pw, nh * nw, c])
    if mid == "layernorm":
        y = b.node("LayerNormalization", [y, b.const(b.rng.standard_normal(c) * 0.5 + 1),
                                          b.const(b.rng.standard_normal(c) * 0.1)], axis=-1, epsilon=1e-5)
    else:
        y = b.node("Relu", [y])
    y = b.reshape(y, [1, ph * pw, nh * nw, c])
    y = b.node("Transpose", [y], perm=[0, 3, 2, 1])
    y = b.reshape(y, [c * nh, nw, ph, pw])
    y = b.node("Transpose", [y], perm=[0, 2, 1, 3])
    y = b.reshape(y, [1, c, h, w])
    if out == "conv":
        y = b.conv(y, c, 8)
    return b.save(path, (1, 8, h, w), [y], opset=17)


def run(path: Path, precision: str, threads: int, x: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": precision})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer({"x": x})[0]).copy()
    req.infer({"x": x * 0.5})  # a second run with other data reads the same buffers
    np.testing.assert_array_equal(np.asarray(req.infer({"x": x})[0]), got, err_msg="second run")
    return got, [r for r in req.get_profiling_info() if r.status == "EXECUTED"]


def inputs(path: Path) -> tuple[np.ndarray, np.ndarray]:
    dims = tuple(d.dim_value for d in onnx.load(str(path)).graph.input[0].type.tensor_type.shape.dim)
    x = np.random.default_rng(5).standard_normal(dims).astype(np.float32)
    return x, ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("c", "hw"), [(16, (8, 8)), (24, (4, 6)), (40, (6, 4))])
@pytest.mark.parametrize(("source", "out", "mid"), [("conv", "conv", "layernorm"), ("conv", "output", "relu"),
                                                    ("plain", "conv", "relu"), ("plain", "output", "layernorm")])
def test_unfold_fold_f32(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c: int, hw: tuple[int, int], source: str,
                         out: str, mid: str, threads: int) -> None:
    path = mobilevit_model(tmp_path / "m.onnx", c=c, hw=hw, source=source, out=out, mid=mid)
    x, want = inputs(path)
    got, rows = run(path, "f32", threads, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    monkeypatch.setenv("OPFORGE_CPU_PERMUTE_CHAIN", "0")
    off, off_rows = run(path, "f32", threads, x)
    np.testing.assert_array_equal(got, off)  # the same elements moved: bit-exact
    execs = [r.exec_type for r in rows if r.node_type == "Transpose"]
    assert len([r for r in off_rows if r.node_type == "Transpose"]) == 4
    # unfold: the convolution's output read channels-last through one reorder, then one permute;
    # fold: one permute, then (read by a convolution) a channels-last view that moves nothing
    assert len(execs) == 2 + (source == "conv") + (out == "conv"), execs
    assert execs.count("channels_last_view") == (out == "conv"), execs
    assert execs.count("permute") == 2, execs
    assert not any(r.node_type == "Reorder" for r in rows[:3]) or source != "conv", [r.node_type for r in rows]


@pytest.mark.skipif(not native_bf16, reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("c", "hw"), [(32, (8, 8)), (48, (4, 6))])
def test_unfold_fold_bf16(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c: int, hw: tuple[int, int],
                          threads: int) -> None:
    path = mobilevit_model(tmp_path / "m.onnx", c=c, hw=hw)
    x, want = inputs(path)
    got, rows = run(path, "bf16", threads, x)
    np.testing.assert_allclose(got, want, rtol=3e-2, atol=3e-2 * float(np.abs(want).max()))
    monkeypatch.setenv("OPFORGE_CPU_PERMUTE_CHAIN", "0")
    off, _ = run(path, "bf16", threads, x)
    np.testing.assert_array_equal(got, off)
    assert [r.exec_type for r in rows if r.node_type == "Transpose"].count("channels_last_view") == 1


def chain_model(path: Path, steps: list[tuple[str, list[int]]], x_shape: tuple[int, ...], *, matmul: bool = False,
                second_reader: int = -1) -> Path:
    """x -> Sigmoid -> the Reshape/Transpose ``steps`` -> (``matmul``: x' x W) -> output; with
    ``second_reader`` >= 0 the output of that step is also a model output."""
    b = Graph(len(steps))
    y = b.node("Sigmoid", ["x"])
    outs = []
    for i, (kind, arg) in enumerate(steps):
        y = b.reshape(y, arg) if kind == "reshape" else b.node("Transpose", [y], perm=arg)
        if i == second_reader:
            outs.append(y)
    if matmul:
        y = b.node("MatMul", [y, b.const(b.rng.standard_normal((x_shape[-1], 5)))])
    return b.save(path, x_shape, [y, *outs])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("case", "x_shape", "steps", "transposes"), [
    # the transposes cancel out: one Reshape
    ("cancel", (2, 3, 4), [("transpose", [1, 0, 2]), ("reshape", [3, 8]), ("reshape", [3, 2, 4]),
                           ("transpose", [1, 0, 2])], 0),
    # a Reshape that regroups across factors (6 x 4 -> 4 x 6): not one permutation, left alone
    ("not_a_permutation", (6, 4), [("transpose", [1, 0]), ("reshape", [6, 4]), ("transpose", [1, 0])], 2),
    # Swin-like window partition and back, a 1 in the shape, Squeeze-free rank changes
    ("windows", (1, 8, 6, 5), [("reshape", [1, 4, 2, 3, 2, 5]), ("transpose", [0, 1, 3, 2, 4, 5]),
                               ("reshape", [24, 10]), ("reshape", [1, 4, 3, 2, 2, 5]),
                               ("transpose", [0, 5, 1, 3, 2, 4])], 1)])
def test_chains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, x_shape: tuple[int, ...],
                steps: list[tuple[str, list[int]]], transposes: int, threads: int) -> None:
    path = chain_model(tmp_path / "m.onnx", steps, x_shape)
    x, want = inputs(path)
    got, rows = run(path, "f32", threads, x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=case)
    assert len([r for r in rows if r.node_type == "Transpose" and r.exec_type != "copy"]) == transposes, \
        [(r.node_type, r.exec_type) for r in rows]
    monkeypatch.setenv("OPFORGE_CPU_PERMUTE_CHAIN", "0")
    off, _ = run(path, "f32", threads, x)
    np.testing.assert_array_equal(got, off)


@pytest.mark.parametrize(("matmul", "second_reader"), [(True, -1), (False, 1)])
def test_left_alone(tmp_path: Path, matmul: bool, second_reader: int) -> None:
    """A chain into a MatMul (the emitter folds a Transpose into its strides) or with an
    intermediate that is also read elsewhere keeps its nodes."""
    steps = [("transpose", [0, 2, 1]), ("reshape", [2, 5, 4]), ("transpose", [0, 2, 1])]
    path = chain_model(tmp_path / "m.onnx", steps, (2, 4, 5), matmul=matmul, second_reader=second_reader)
    x, want = inputs(path)
    got, rows = run(path, "f32", 1, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    names = [r.node_name for r in rows if r.node_type == "Transpose"]
    assert not any(n.endswith(("/permute", "/to_nhwc")) for n in names), names


def test_compose() -> None:
    unfold = [("reshape", (1536, 2, 16, 2)), ("transpose", (0, 2, 1, 3)), ("reshape", (1, 96, 256, 4)),
              ("transpose", (0, 3, 2, 1)), ("reshape", (4, 256, 96))]
    assert compose((1, 96, 32, 32), unfold) == ((96, 16, 2, 16, 2), (2, 4, 1, 3, 0))
    # read channels-last: x = Transpose(x_nhwc, [0, 3, 1, 2]); C stays innermost
    assert compose((1, 32, 32, 96), [("transpose", (0, 3, 1, 2)), *unfold]) == ((16, 2, 16, 2, 96), (1, 3, 0, 2, 4))
    assert compose((2, 3), [("transpose", (1, 0)), ("transpose", (1, 0))]) == ((6,), (0,))
    assert compose((6, 4), [("transpose", (1, 0)), ("reshape", (6, 4))]) is None


@pytest.mark.parametrize("threads", [1, 2])
def test_unfold_fold_int8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    """The QDQ copy (ONNX Runtime's quantizer): the int8 pass runs the moves on the bytes between
    QuantizedConvolutions, whose u8 nhwc output and input the chain reads and writes channels-last
    the same way."""
    from int8_testing import output_scale, quantize, run_qdq_graph

    src = mobilevit_model(tmp_path / "f.onnx", c=32, hw=(8, 8))
    path = quantize(src, tmp_path / "q.onnx", (1, 8, 8, 8), per_channel=False, activation="u8")
    x, _ = inputs(path)
    got, rows = run(path, "f32", threads, x)
    monkeypatch.setenv("OPFORGE_CPU_PERMUTE_CHAIN", "0")
    off, _ = run(path, "f32", threads, x)
    np.testing.assert_array_equal(got, off)
    assert any(r.node_type == "QuantizedConvolution" for r in rows), [r.node_type for r in rows]
    execs = [r.exec_type for r in rows if r.node_type == "Transpose"]
    assert execs.count("channels_last_view") == 1 and execs.count("permute") == 2, execs
    # the QDQ arithmetic as written, within a few output steps (LayerNorm rounds differently)
    np.testing.assert_allclose(got, run_qdq_graph(path, x), atol=4 * output_scale(path))
