"""The Quantize and Dequantize steps of a QDQ model (issue 15) run 16-lane AVX-512 loops where
oneDNN's ISA has AVX-512 (exec type ``loop:avx512``) and SSE2 ones elsewhere: both give
QuantizeLinear/DequantizeLinear's values (a division by the scale, rounding half to even,
saturation), the same bytes in both builds, NaN and infinities included, and vector tails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest
from onnx_graph import TP, OnnxGraph, helper

_RUN_SAVED = """
import sys, numpy as np, opforge
core = opforge.Core()
req = core.compile_model(core.read_model(sys.argv[1]), "CPU", {"INFERENCE_NUM_THREADS": 2}).create_infer_request()
outs = req.infer({0: np.load(sys.argv[2])})
np.save(sys.argv[3], np.stack([np.asarray(outs[0]), np.asarray(outs[1]).astype(np.float32)]))
"""

SCALE, SHAPE = 0.05, (1, 3, 7, 5)  # 105 elements: six vectors of 16 and a tail of 9 a thread


def _model(tmp_path: Path, dtype: Any, zero: int) -> Path:
    """x -> QuantizeLinear -> DequantizeLinear (-> Relu): the dequantized values are the bytes'
    grid, so comparing them compares the bytes."""
    g = OnnxGraph(seed=1)
    s, z = g.const(SCALE), g.const(zero, dtype)
    q = g.node("QuantizeLinear", ["x", s, z])
    d = g.node("DequantizeLinear", [q, s, z])
    r = g.node("Relu", [d])  # (an f32 op after it, as in a model)
    return g.save_model(tmp_path / "qdq.onnx", [helper.make_tensor_value_info("x", TP.FLOAT, SHAPE)], [d, r], 13)


def _input() -> np.ndarray:
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(SHAPE) * 4).astype(np.float32)
    flat = x.reshape(-1)
    flat[:20] = (np.arange(-10, 10) + 0.5) * np.float32(SCALE)  # near .5 ties
    flat[20:26] = [np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9]
    flat[40] = np.nan
    return x


def _reference(x: np.ndarray, lo: int, hi: int, zero: int) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        q = np.clip(np.rint(np.clip(x / np.float32(SCALE), -2.0**30, 2.0**30)) + zero, lo, hi)
    q = np.where(np.isnan(x), lo, q)
    return ((q.astype(np.float32) - np.float32(zero)) * np.float32(SCALE)).astype(np.float32)


@pytest.mark.parametrize(("dtype", "zero", "lo", "hi"), [(np.uint8, 128, 0, 255), (np.int8, -3, -128, 127)])
@pytest.mark.parametrize("threads", [1, 2])
def test_quantize_dequantize_loops_match_the_qdq_arithmetic(tmp_path: Path, dtype: Any, zero: int, lo: int, hi: int,
                                                              threads: int) -> None:
    path = _model(tmp_path, dtype, zero)
    x = _input()
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU",
                                  {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    outs = req.infer({0: x})
    np.testing.assert_array_equal(np.asarray(outs[0]), _reference(x, lo, hi, zero))
    rows = {r.node_type: r.exec_type for r in req.get_profiling_info() if r.status != "OPTIMIZED_OUT"}
    assert "Quantize" in rows and "Dequantize" in rows, rows
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
    if _host_avx512() and (isa in ("", "ALL") or isa.startswith("AVX512")):
        assert rows["Quantize"] == "loop:avx512" and rows["Dequantize"] == "loop:avx512", rows


def _host_avx512() -> bool:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return all(f in flags for f in ("avx512f", "avx512bw", "avx512vl", "avx512dq"))


def test_wide_and_baseline_loops_give_the_same_bytes(tmp_path: Path) -> None:
    """Run here and as an AVX2 host (ONEDNN_MAX_CPU_ISA=AVX2: the SSE2 loops): identical
    results, NaN and infinities included."""
    path = _model(tmp_path, np.uint8, 128)
    np.save(tmp_path / "x.npy", _input())
    got = {}
    for name, isa in (("wide", None), ("baseline", "AVX2")):
        env = dict(os.environ)
        env.pop("ONEDNN_MAX_CPU_ISA", None)
        if isa:
            env["ONEDNN_MAX_CPU_ISA"] = isa
        done = subprocess.run([sys.executable, "-c", _RUN_SAVED, str(path), str(tmp_path / "x.npy"),
                               str(tmp_path / f"{name}.npy")], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        got[name] = np.load(tmp_path / f"{name}.npy")
    np.testing.assert_array_equal(got["wide"], got["baseline"])


@pytest.mark.parametrize("scale", [0.05, 0.0027225523, 1 / 3, 0.1, 7.3e-4, 3.0])
def test_quantize_rounds_near_ties_as_a_division(tmp_path: Path, scale: float) -> None:
    """The AVX-512 loop divides as a product by the reciprocal and an FMA correction step: every
    float within 8 ulps of each .5 tie (and of each integer) of the whole u8 range quantizes as
    x / scale does (NumPy's division, rounding half to even)."""
    s = np.float32(scale)
    centres = ((np.arange(-140, 140, dtype=np.float64) / 2) * np.float64(s)).astype(np.float32)
    ulps = np.arange(-8, 9, dtype=np.int32)
    x = (centres.view(np.int32)[:, None] + ulps[None, :]).view(np.float32).reshape(-1)
    x = np.where(np.isfinite(x), x, 0).astype(np.float32)
    x = np.concatenate([x, np.zeros((-x.size) % 16, np.float32)]).reshape(1, 1, 1, -1)
    g = OnnxGraph(seed=3)
    sc, z = g.const(s), g.const(128, np.uint8)
    d = g.node("DequantizeLinear", [g.node("QuantizeLinear", ["x", sc, z]), sc, z])
    path = g.save_model(tmp_path / "q.onnx", [helper.make_tensor_value_info("x", TP.FLOAT, x.shape)], [d], 13)
    core = opforge.Core()
    got = np.asarray(core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_NUM_THREADS": 1})([x])[0])
    q = np.clip(np.rint(x / s) + 128, 0, 255)
    np.testing.assert_array_equal(got, ((q.astype(np.float32) - np.float32(128)) * s).astype(np.float32))
