"""bf16 programs keep squeeze-and-excitation blocks in bf16 (emit.py ``_bf16_passes``, ``bf16_se``):
the depthwise convolution writes its block tensor in bf16, the global pool (ReduceMean) sums its
exact values into f32, and the channel scale (Multiply by the excitation) reads it and writes bf16
for the projection convolution, as OpenVINO's bf16 graph does. onnx.helper models of MobileNetV3
(HardSwish, HardSigmoid) and EfficientNet (SiLU as x * Sigmoid(x), Sigmoid gate) inverted residual
blocks, 1 and 2 threads: f32 matches ONNX Runtime, bf16 matches f32 within bf16 rounding, NaN and
+-inf land where f32 puts them; a scale whose result the caller reads writes f32, and a
block tensor with another reader stays f32."""

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

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")


class Graph(OnnxGraph):
    def __init__(self, seed: int, positive: bool = False) -> None:
        super().__init__(seed)
        self.positive = positive  # weights in (0, 1]: an inf or NaN pixel stays one in every channel

    def conv(self, x: str, cin: int, cout: int, k: int = 1, group: int = 1, stride: int = 1) -> str:
        shape = (cout, cin // group, k, k)
        w = (self.rng.uniform(0.05, 1.0, shape) if self.positive else self.rng.standard_normal(shape))
        w = w * (1.0 / (cin // group * k * k)) ** 0.5
        b = self.rng.standard_normal(cout) * 0.1
        return self.node("Conv", [x, self.const(w), self.const(b)], group=group, pads=[k // 2] * 4,
                         strides=[stride, stride])

    def act(self, x: str, kind: str) -> str:
        if kind == "hswish":
            return self.node("HardSwish", [x])
        if kind == "silu":
            return self.node("Mul", [x, self.node("Sigmoid", [x])])
        return self.node("Relu", [x])

    def se(self, x: str, c: int, gate: str) -> str:
        """Global pool -> 1x1 (ReLU) -> 1x1 -> HardSigmoid / Sigmoid -> x * s."""
        s = self.node("GlobalAveragePool", [x])
        s = self.node("Relu", [self.conv(s, c, max(4, c // 4))])
        s = self.conv(s, max(4, c // 4), c)
        s = (self.node("HardSigmoid", [s], alpha=1.0 / 6, beta=0.5) if gate == "hsigmoid"
             else self.node("Sigmoid", [s]))
        return self.node("Mul", [x, s])

    def block(self, x: str, cin: int, cexp: int, cout: int, act: str, gate: str, stride: int = 1,
              ) -> tuple[str, str, str]:
        """Inverted residual: expand 1x1 -> depthwise 3x3 -> SE -> project 1x1 (+ residual)."""
        h = self.act(self.conv(x, cin, cexp), act)
        h = self.act(self.conv(h, cexp, cexp, 3, group=cexp, stride=stride), act)
        scaled = self.se(h, cexp, gate)
        y = self.conv(scaled, cexp, cout)
        if stride == 1 and cin == cout:
            y = self.node("Add", [y, x])
        return y, scaled, h



def se_model(path: Path, *, act: str, gate: str, size: int = 14, positive: bool = False,
             scale_output: bool = False, block_output: bool = False) -> Path:
    """Stem 3x3 -> three SE inverted residual blocks (one strided) -> a 1x1 head -> global pool.
    ``scale_output``: the last block's scaled tensor is a model output too (so that scale writes
    f32); ``block_output``: the last block's tensor (the depthwise output) too (so it stays f32)."""
    g = Graph(7 if act == "hswish" else 11, positive)
    h = g.act(g.conv("x", 8, 16, 3), act)
    h, _, _ = g.block(h, 16, 32, 16, act, gate)
    h, _, _ = g.block(h, 16, 48, 24, act, gate, stride=2)
    h, scaled, dw = g.block(h, 24, 72, 24, act, gate)
    outs = [g.node("GlobalAveragePool", [g.act(g.conv(h, 24, 32), act)])]
    if scale_output:
        outs.append(scaled)
    if block_output:
        outs.append(dw)
    return g.save(path, (1, 8, size, size), outs)


def run(path: Path, x: np.ndarray, precision: str, threads: int) -> tuple[list[np.ndarray], dict[str, Any]]:
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": precision})
    req = compiled.create_infer_request()
    res = req.infer({"x": x})
    got = [np.asarray(res[i]) for i in range(len(compiled.outputs))]
    req.infer({"x": x * 0.5})  # a second run with other data reads the same buffers
    again = req.infer({"x": x})
    for i, g in enumerate(got):
        np.testing.assert_array_equal(np.asarray(again[i]), g, err_msg=f"output {i}, second run")
    return got, {r.node_name: r for r in req.get_profiling_info() if r.status == "EXECUTED"}


def assert_bf16_close(got: np.ndarray, want: np.ndarray) -> None:
    # bf16 rounding of the stored tensors and operands (8 bits of mantissa, ~4e-3 each), not
    # more; and it really rounded (an f32 program agrees to ~1e-6)
    rel = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
    assert 1e-4 < rel < 3e-2, rel


def se_rows(rows: dict[str, Any]) -> tuple[list[str], list[str]]:
    """exec types of the ReduceMean and Multiply steps (the SE pools and scales)."""
    pools = [r.exec_type for r in rows.values() if r.node_type == "ReduceMean"]
    # (HardSigmoid's own Multiply by alpha is not a scale)
    scales = [r.exec_type for n, r in rows.items() if r.node_type == "Multiply" and "HardSigmoid" not in n]
    return pools, scales


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("act", "gate"), [("hswish", "hsigmoid"), ("silu", "sigmoid"), ("relu", "hsigmoid")])
def test_se_blocks_stay_bf16(tmp_path: Path, act: str, gate: str, threads: int) -> None:
    path = se_model(tmp_path / "m.onnx", act=act, gate=gate)
    x = np.random.default_rng(3).standard_normal((1, 8, 14, 14)).astype(np.float32)
    (want_ort,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    (f32,), _ = run(path, x, "f32", threads)
    np.testing.assert_allclose(f32, want_ort, rtol=1e-4, atol=1e-5)
    (got,), rows = run(path, x, "bf16", threads)
    assert_bf16_close(got, f32)
    pools, scales = se_rows(rows)
    # the three SE pools and the head's global pool read their convolutions' bf16 outputs in
    # place; the scales are oneDNN binaries (bf16 in, bf16 out)
    assert len(pools) == 4 and all(e.endswith(":bf16") for e in pools), pools
    assert len(scales) == 3 and all(e.startswith("jit") for e in scales), scales
    # HardSigmoid(alpha=1/6, beta=1/2) is HSigmoid, a post-op of the excitation's convolution
    ran = {r.node_type for r in rows.values()}
    assert not {"Clamp", "HSigmoid", "Sigmoid", "Add"} & ran, ran
    assert not any(r.node_type == "Reorder" and n != "output_reorder" for n, r in rows.items()), rows


@needs_bf16
def test_se_scale_read_by_the_caller_writes_f32(tmp_path: Path) -> None:
    # the last block's scaled tensor is also a model output: that Multiply reads bf16 and writes
    # f32 (not bf16_output); the other two still hand bf16 to their projections
    path = se_model(tmp_path / "m.onnx", act="hswish", gate="hsigmoid", scale_output=True)
    x = np.random.default_rng(4).standard_normal((1, 8, 14, 14)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    f32, _ = run(path, x, "f32", 1)
    for a, b in zip(f32, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    got, rows = run(path, x, "bf16", 1)
    for a, b in zip(got, f32, strict=True):
        assert a.dtype == np.float32 and a.shape == b.shape
        assert_bf16_close(a, b)
    pools, _ = se_rows(rows)
    assert len(pools) == 4 and all(e.endswith(":bf16") for e in pools), pools


@needs_bf16
def test_se_block_read_by_the_caller_stays_f32(tmp_path: Path) -> None:
    # the last block's depthwise output is also a model output: it stays f32, so that block's
    # pool reads f32; the others read bf16
    path = se_model(tmp_path / "m.onnx", act="silu", gate="sigmoid", block_output=True)
    x = np.random.default_rng(6).standard_normal((1, 8, 14, 14)).astype(np.float32)
    f32, _ = run(path, x, "f32", 1)
    got, rows = run(path, x, "bf16", 1)
    for a, b in zip(got, f32, strict=True):
        assert a.dtype == np.float32 and a.shape == b.shape
        assert_bf16_close(a, b)
    pools, _ = se_rows(rows)
    assert len(pools) == 4 and sum(e.endswith(":bf16") for e in pools) == 3, pools


@needs_bf16
@pytest.mark.parametrize(("act", "gate"), [("hswish", "hsigmoid"), ("silu", "sigmoid")])
def test_se_blocks_keep_nan_and_inf(tmp_path: Path, act: str, gate: str) -> None:
    # positive weights: a +inf (NaN) input pixel makes +inf (NaN) in every channel of its
    # neighbourhood; the SE pools carry it into the gates, the bf16 scales carry it on (and
    # inf * 0 = NaN where a gate is 0) as the f32 program does. Outputs: the pooled head and the
    # last block's scaled tensor (spatial, that scale's bf16 input written as f32)
    path = se_model(tmp_path / "m.onnx", act=act, gate=gate, size=28, positive=True, scale_output=True)
    x = np.random.default_rng(5).uniform(0.0, 1.0, (1, 8, 28, 28)).astype(np.float32)
    for special in (np.inf, np.nan):
        x2 = x.copy()
        x2[0, :, 20, 21] = special
        wants, _ = run(path, x2, "f32", 1)
        gots, rows = run(path, x2, "bf16", 1)
        assert not np.isfinite(wants[1]).all() and np.isfinite(wants[1]).any(), special
        for got, want in zip(gots, wants, strict=True):
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
            np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
            finite = np.isfinite(want)
            if finite.any():
                np.testing.assert_allclose(got[finite], want[finite], rtol=3e-2,
                                           atol=3e-2 * float(np.abs(want[finite]).max()))
        pools, _ = se_rows(rows)
        assert len(pools) == 4 and all(e.endswith(":bf16") for e in pools), pools


def bf16_round(a: np.ndarray) -> np.ndarray:
    """f32 -> nearest bf16 (ties to even) -> f32, for finite values."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("hw", [(7, 9), (20, 20), (1, 3)])
def test_bf16_pool_and_scale_are_exact(tmp_path: Path, hw: tuple[int, int], threads: int) -> None:
    # an identity depthwise convolution writes bf16-exact input unchanged in bf16; the pool of it
    # is the f64 mean of those values within f32 rounding (40 channels: two AVX-512 runs of 16 and
    # a scalar tail of 8; 63 positions: run_blocked, 400: segments of 128, 3: no 8-group), and the
    # scale is bf16(x * s) exactly (f32 product, rounded once), read by a second identity convolution
    c, (h, w) = 40, hw
    g = Graph(1)
    ones = g.const(np.ones((c, 1, 1, 1)))
    d = g.node("Conv", ["x", ones], group=c)
    pooled = g.node("GlobalAveragePool", [d])
    s = g.const(np.random.default_rng(2).uniform(0.5, 2.0, (1, c, 1, 1)))
    scaled = g.node("Conv", [g.node("Mul", [d, s]), ones], group=c)
    path = g.save(tmp_path / "m.onnx", (1, c, h, w), [pooled, scaled])
    x = bf16_round(np.random.default_rng(3).standard_normal((1, c, h, w)).astype(np.float32) * 4)
    (pool, out), rows = run(path, x, "bf16", threads)
    ran = {r.node_type: r.exec_type for r in rows.values()}
    assert ran["ReduceMean"].endswith(":bf16") and ran["Multiply"].startswith("jit"), ran
    want = x.astype(np.float64).mean(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(pool, want, rtol=2e-7, atol=1e-7)
    sv = np.asarray(onnx.numpy_helper.to_array(g.inits[1]), np.float32)
    np.testing.assert_array_equal(out, bf16_round(x * sv))
