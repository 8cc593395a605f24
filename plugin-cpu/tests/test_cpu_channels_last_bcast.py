"""A per-channel f32 Multiply/Add over a channels-last tensor (a squeeze-excitation scale after a
depthwise convolution that writes nhwc) runs our AVX-512 loop (core/channels_last_bcast.cpp,
exec type ``mul_channels_last:avx512``) instead of oneDNN's per-pixel binary. onnx.helper blocks
with 16-144 channels (in registers up to 64, a channel loop beyond, masked tails), batch 1 and 2
(a per-batch scale), 1 and 2 threads: results bit-identical to the 2-thread run and equal to ONNX
Runtime; NaN and +-inf in the tensor or the scale come out where ONNX Runtime puts them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from opforge_cpu._loader import load_core

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, TP = onnx.helper, onnx.TensorProto
from onnx_graph import OnnxGraph  # noqa: E402  (after onnx is known to be there)

avx512 = pytest.mark.skipif(not str(load_core().cpu_isa()).startswith("avx512_core"),
                            reason="the loop is AVX-512 only (other hosts keep oneDNN's binary)")


def se_scale_model(path: Path, c: int, op: str, size: int, seed: int) -> Path:
    """1x1 conv (8 -> c) -> depthwise 3x3 (nhwc output on AVX-512) -> x op gate(pool(x)) -> 1x1 (c -> 8)."""
    g = OnnxGraph(seed)

    def conv(x: str, cin: int, cout: int, k: int = 1, group: int = 1) -> str:
        w = g.rng.standard_normal((cout, cin // group, k, k)) * (1.0 / (cin // group * k * k)) ** 0.5
        return g.node("Conv", [x, g.const(w), g.const(g.rng.standard_normal(cout) * 0.1)], group=group,
                      pads=[k // 2] * 4)

    h = g.node("Relu", [conv("x", 8, c)])
    h = g.node("Relu", [conv(h, c, c, 3, group=c)])
    s = g.node("Sigmoid", [conv(g.node("GlobalAveragePool", [h]), c, c)])
    y = conv(g.node(op, [h, s]), c, 8)
    return g.save(path, (None, 8, size, size), [y])  # type: ignore[arg-type]


def run(core: Any, path: Path, x: np.ndarray, threads: int) -> tuple[np.ndarray, list[str]]:
    cm = core.compile_model(core.read_model(str(path)), "CPU",
                            {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True})
    req = cm.create_infer_request()
    out = np.array(req.infer({"x": x})[0])
    kinds = [p.exec_type for p in req.get_profiling_info() if p.node_type in ("Multiply", "Add") and p.exec_type != "fused"]
    return out, kinds


@avx512
@pytest.mark.parametrize("op", ["Mul", "Add"])
@pytest.mark.parametrize("c,batch", [(16, 1), (24, 2), (32, 1), (40, 1), (64, 2), (72, 1), (144, 1)])
def test_channel_scale_matches_onnxruntime(tmp_path: Path, op: str, c: int, batch: int) -> None:
    path = se_scale_model(tmp_path / "se.onnx", c, op, 13, seed=c + batch)
    x = np.random.default_rng(c).standard_normal((batch, 8, 13, 13)).astype(np.float32)
    core = opforge.Core()
    out1, kinds = run(core, path, x, 1)
    assert kinds == [f"{op.lower()}_channels_last:avx512"], kinds
    out2, _ = run(core, path, x, 2)
    np.testing.assert_array_equal(out1, out2)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(out1, ref, rtol=1e-5, atol=1e-5)


@avx512
def test_channel_scale_nan_inf(tmp_path: Path) -> None:
    """NaN/+-inf pixels of the input spread through the block as in ONNX Runtime (both threads)."""
    path = se_scale_model(tmp_path / "se.onnx", 40, "Mul", 9, seed=3)
    x = np.random.default_rng(5).standard_normal((1, 8, 9, 9)).astype(np.float32)
    x[0, :, 2, 3] = np.nan
    x[0, 1, 6, 6] = np.inf
    x[0, 2, 0, 8] = -np.inf
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, {"x": x})
    core = opforge.Core()
    for threads in (1, 2):
        out, kinds = run(core, path, x, threads)
        assert kinds == ["mul_channels_last:avx512"], kinds
        np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(out), np.isinf(ref))
        finite = np.isfinite(ref)
        np.testing.assert_allclose(out[finite], ref[finite], rtol=1e-5, atol=1e-5)
