"""A Transpose of a convolution's output, which arrives in a oneDNN layout (nChw16c, nhwc), is one
oneDNN reorder into the permuted order (issue 15): ConvNeXt/EdgeNeXt's NCHW -> NHWC before their
channels-last LayerNorm, in f32 and on the u8 bytes of a QDQ model. No reorder to plain runs
before it, and the values are ONNX Runtime's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import opforge
import pytest
from onnx_graph import TP, OnnxGraph, helper


def _run(path: Path, x: np.ndarray, threads: int) -> tuple[np.ndarray, list[Any]]:
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU",
                                  {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                                   "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer({0: x})[0])
    return got, [r for r in req.get_profiling_info() if r.status != "OPTIMIZED_OUT"]


def _ort(path: Path, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {sess.get_inputs()[0].name: x})[0])


def _conv_then_transpose(tmp_path: Path, channels: int, perm: list[int]) -> Path:
    g = OnnxGraph(seed=channels + perm[0])
    w = g.const(g.rng.standard_normal((channels, 8, 3, 3)) * 0.2)
    c = g.node("Conv", ["x", w], pads=[1, 1, 1, 1])
    w2 = g.const(g.rng.standard_normal((channels, 1, 3, 3)) * 0.3)
    d = g.node("Conv", [c, w2], pads=[1, 1, 1, 1], group=channels)  # depthwise: a blocked output
    t = g.node("Transpose", [d], perm=perm)
    y = g.node("Relu", [t])
    return g.save(tmp_path / "t.onnx", (1, 8, 9, 11), [y])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("channels", [48, 40])  # 40: nChw16c pads the last block
@pytest.mark.parametrize("perm", [[0, 2, 3, 1], [0, 3, 2, 1], [0, 1, 3, 2], [3, 1, 0, 2]])
def test_transpose_of_a_convolution_output(tmp_path: Path, threads: int, channels: int, perm: list[int]) -> None:
    path = _conv_then_transpose(tmp_path, channels, perm)
    x = np.random.default_rng(3).standard_normal((1, 8, 9, 11)).astype(np.float32)
    got, rows = _run(path, x, threads)
    np.testing.assert_allclose(got, _ort(path, x), rtol=1e-5, atol=1e-5)
    # the permute is the reorder itself: no reorder to plain before it
    assert not [r.node_name for r in rows if r.node_name.endswith("/reorder_input")], [r.node_name for r in rows]
    kinds = {r.node_type: r.exec_type for r in rows}
    assert "Transpose" in kinds and kinds["Transpose"] not in ("permute", "copy"), kinds


def test_transpose_with_no_perm_reverses_a_blocked_input(tmp_path: Path) -> None:
    g = OnnxGraph(seed=5)
    w = g.const(g.rng.standard_normal((32, 8, 1, 1)) * 0.2)
    c = g.node("Conv", ["x", w])
    y = g.node("Relu", [g.node("Transpose", [c])])
    path = g.save(tmp_path / "rev.onnx", (1, 8, 5, 7), [y])
    x = np.random.default_rng(4).standard_normal((1, 8, 5, 7)).astype(np.float32)
    got, _ = _run(path, x, 1)
    np.testing.assert_allclose(got, _ort(path, x), rtol=1e-5, atol=1e-5)


def test_channels_last_layer_norm_block_in_int8(tmp_path: Path) -> None:
    """EdgeNeXt/ConvNeXt's block, quantized by ONNX Runtime: depthwise conv -> Transpose to NHWC
    -> LayerNorm -> MatMul -> Transpose back. The first Transpose moves the u8 bytes of the
    quantized depthwise convolution straight from its layout (one scale on both sides), and the
    result agrees with ONNX Runtime's int8 execution within one quantization step."""
    pytest.importorskip("onnxruntime.quantization")
    from int8_testing import assert_close_steps, output_scale, quantize

    c = 48
    g = OnnxGraph(seed=9)
    w0 = g.const(g.rng.standard_normal((c, 8, 1, 1)) * 0.3)
    stem = g.node("Conv", ["x", w0])
    wd = g.const(g.rng.standard_normal((c, 1, 7, 7)) * 0.2)
    d = g.node("Conv", [stem, wd], pads=[3, 3, 3, 3], group=c)
    t = g.node("Transpose", [d], perm=[0, 2, 3, 1])
    n = g.node("LayerNormalization", [t, g.const(np.ones(c)), g.const(np.zeros(c))], axis=-1, epsilon=1e-6)
    m = g.node("MatMul", [n, g.const(g.rng.standard_normal((c, c)) * 0.2)])
    back = g.node("Transpose", [m], perm=[0, 3, 1, 2])
    y = g.node("Add", [back, stem])
    shape = (1, 8, 14, 14)
    src = g.save_model(tmp_path / "f32.onnx", [helper.make_tensor_value_info("x", TP.FLOAT, shape)], [y], 17)
    q = quantize(src, tmp_path / "q.onnx", shape, True, "u8")
    x = np.random.default_rng(10).standard_normal(shape).astype(np.float32)
    for threads in (1, 2):
        got, rows = _run(q, x, threads)
        assert_close_steps(got, _ort(q, x), output_scale(q))
        transposes = [r for r in rows if r.node_type == "Transpose"]
        assert len(transposes) == 2, [(r.node_type, r.exec_type) for r in rows]
        assert not [r.node_name for r in rows if r.node_name.endswith("/reorder_input")
                    and "Transpose" in r.node_name], [r.node_name for r in rows]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("reader", ["Conv", "ConvAndOutput", "Softmax"])
def test_nhwc_to_nchw_before_a_convolution_moves_nothing(tmp_path: Path, threads: int, reader: str) -> None:
    """The Transpose back to NCHW after a channels-last block: when every reader takes a oneDNN
    layout (a convolution), its output is the input's bytes declared channels-last
    (``channels_last_view``); a model output or a reader that wants plain data gets the permute."""
    g = OnnxGraph(seed=7)
    a = g.node("Relu", ["x"])
    t = g.node("Transpose", [a], perm=[0, 3, 1, 2])
    outs = []
    if reader in ("Conv", "ConvAndOutput"):
        outs.append(g.node("Conv", [t, g.const(g.rng.standard_normal((40, 1, 3, 3)) * 0.3)], pads=[1, 1, 1, 1], group=40))
        outs.append(g.node("Conv", [t, g.const(g.rng.standard_normal((16, 40, 1, 1)) * 0.3)]))
        if reader == "ConvAndOutput":
            outs.append(t)
    else:
        outs.append(g.node("Softmax", [t], axis=1))
    path = g.save(tmp_path / "back.onnx", (1, 9, 11, 40), outs)
    x = np.random.default_rng(8).standard_normal((1, 9, 11, 40)).astype(np.float32)
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU",
                                  {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                                   "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    got = req.infer({0: x})
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for mine, want in zip(got.values() if hasattr(got, "values") else got, sess.run(None, {"x": x}), strict=True):
        np.testing.assert_allclose(np.asarray(mine), want, rtol=1e-5, atol=1e-5)
    kinds = {r.node_type: r.exec_type for r in req.get_profiling_info() if r.status != "OPTIMIZED_OUT"}
    assert kinds["Transpose"] == ("channels_last_view" if reader == "Conv" else "permute"), kinds


def test_ncdhw_view_before_a_3d_convolution(tmp_path: Path) -> None:
    g = OnnxGraph(seed=12)
    t = g.node("Transpose", [g.node("Relu", ["x"])], perm=[0, 4, 1, 2, 3])
    y = g.node("Conv", [t, g.const(g.rng.standard_normal((8, 16, 1, 3, 3)) * 0.3)])
    path = g.save(tmp_path / "c3.onnx", (1, 3, 6, 7, 16), [y])
    x = np.random.default_rng(13).standard_normal((1, 3, 6, 7, 16)).astype(np.float32)
    got, rows = _run(path, x, 2)
    np.testing.assert_allclose(got, _ort(path, x), rtol=1e-5, atol=1e-5)
    assert {r.node_type: r.exec_type for r in rows}["Transpose"] == "channels_last_view"
