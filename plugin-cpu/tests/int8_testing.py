"""Helpers of the int8 tests: ONNX Runtime's static QDQ quantizer on seeded inputs, running a model
on opforge's CPU and on ONNX Runtime, and the one-quantization-step comparison (see
test_cpu_int8.py for why one step)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import opforge
from onnx import helper, numpy_helper
from onnxruntime import quantization


def save_model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[np.ndarray | Any], path: Path,
               opset: int = 17) -> Path:
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return path


class _Calibration(quantization.CalibrationDataReader):  # type: ignore[misc]
    """Eight seeded N(0, 1) inputs."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        rng = np.random.default_rng(11)
        self._it = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(8)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


def quantize(src: Path, dst: Path, shape: tuple[int, ...], per_channel: bool, activation: str) -> Path:
    """ONNX Runtime's static quantizer, QDQ format, s8 weights."""
    q = quantization
    q.quantize_static(str(src), str(dst), _Calibration(shape), quant_format=q.QuantFormat.QDQ, per_channel=per_channel,
                      activation_type=q.QuantType.QUInt8 if activation == "u8" else q.QuantType.QInt8,
                      weight_type=q.QuantType.QInt8)
    return dst


def run_both(path: Path, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer({0: x})[0])
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    rows = list(req.get_profiling_info())
    if os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper() in ("AVX2_VNNI", "AVX2", "AVX", "SSE41"):
        # an emulated pre-AVX-512 host: the byte-wise kernels must run their baseline builds
        wide = [(r.node_type, r.exec_type) for r in rows if r.exec_type.endswith(":avx512")]
        assert not wide, wide
    return got, want, rows


def output_scale(path: Path) -> float:
    """The scale of the DequantizeLinear that produces the model's output (QDQ) or of the last
    QLinear node's output."""
    m = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    out = m.graph.output[0].name
    for n in m.graph.node:
        if out in n.output:
            name = n.input[1] if n.op_type == "DequantizeLinear" else n.input[6]
            return float(inits[name])
    raise AssertionError("no quantized output")


def assert_close_steps(got: np.ndarray, want: np.ndarray, step: float) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64)) / step
    assert diff.max() <= 1.0 + 1e-4, f"max difference {diff.max():.3f} quantization steps"
    assert np.mean(diff < 1e-4) >= 0.99, f"only {np.mean(diff < 1e-4):.3%} of the elements are exact"


def int8_steps(rows: list[Any], node_type: str) -> list[Any]:
    return [r for r in rows if r.node_type == node_type and r.status != "OPTIMIZED_OUT"]


def run_qdq_graph(path: Path, x: np.ndarray) -> np.ndarray:
    """ONNX Runtime on the QDQ graph as written (graph optimizations off: every DequantizeLinear,
    f32 op and QuantizeLinear run on their own, no QLinear* fusion): the QDQ arithmetic itself."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {sess.get_inputs()[0].name: x})[0])
