"""Helpers of the int8 tests: ONNX Runtime's static QDQ quantizer on seeded inputs, running a model
on opforge's CPU and on ONNX Runtime, and the one-quantization-step comparison (see
test_cpu_int8.py for why one step)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import opforge
import pytest
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


def seven_bit_copy(q: Path, dst: Path) -> Path:
    """``q`` with the weights the no-VNNI guard (opforge_cpu/passes/int8/no_vnni.py) rounds to 7
    bits replaced by what ``seven_bit`` makes of them: every per-output-channel int8 weight of a
    Conv, ConvTranspose or MatMul, except a depthwise Conv's (one input and one output channel a
    group) while OPFORGE_CPU_INT8_DW_FULL keeps those full-range. The model an exact int8 engine
    (ONNX Runtime on this VNNI host) should agree with when opforge runs on a host without VNNI."""
    from opforge_cpu.passes.int8.no_vnni import DW_EXACT, seven_bit

    m = onnx.load(str(q))
    inits = {i.name: i for i in m.graph.initializer}
    readers: dict[str, list[Any]] = {}
    for node in m.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    for node in m.graph.node:
        if node.op_type != "DequantizeLinear" or node.input[0] not in inits:
            continue
        w = numpy_helper.to_array(inits[node.input[0]])
        users = readers.get(node.output[0], [])
        if w.dtype != np.int8 or not users or any(u.op_type not in ("Conv", "ConvTranspose", "MatMul", "Gemm") for u in users):
            continue
        op = users[0].op_type
        group = next((a.i for a in users[0].attribute if a.name == "group"), 1)
        if DW_EXACT and op == "Conv" and w.ndim >= 3 and w.shape[1] == 1 and w.shape[0] == group > 1:
            continue  # oneDNN's int8 depthwise kernels multiply in int32: kept full-range
        s = numpy_helper.to_array(inits[node.input[1]])
        # the output channels: [C_out, ...], a Gemm's transposed B [N, K]; or a MatMul's (a Gemm's)
        # [K, N], a ConvTranspose's [C_in, C_out, ...]
        trans_b = op == "Gemm" and next((a.i for a in users[0].attribute if a.name == "transB"), 0) == 1
        axis = 0 if op == "Conv" or trans_b else 1
        if s.ndim == 0:
            # per-tensor weights: halving channels apart needs a scale each, so the copy's
            # dequantization becomes per channel (the same values where nothing is halved)
            s = np.full(w.shape[axis], s, np.float32)
            for a in node.attribute:
                if a.name == "axis":
                    node.attribute.remove(a)
                    break
            node.attribute.append(helper.make_attribute("axis", axis))
            if len(node.input) > 2 and node.input[2]:
                z = numpy_helper.to_array(inits[node.input[2]])
                inits[node.input[2]].CopyFrom(numpy_helper.from_array(np.full(s.shape, z, z.dtype), node.input[2]))
        w7, s7 = seven_bit(w, s, 1 if axis == 0 else -1)
        inits[node.input[0]].CopyFrom(numpy_helper.from_array(w7, node.input[0]))
        inits[node.input[1]].CopyFrom(numpy_helper.from_array(s7.reshape(s.shape), node.input[1]))
        for user in users:
            _bias_in_f32(m, user, inits)
    onnx.save(m, str(dst))
    return dst


def _bias_in_f32(m: Any, user: Any, inits: dict[str, Any]) -> None:
    """``user``'s bias (input 2) as an f32 initializer where it is the DequantizeLinear of an
    int32 one: ONNX Runtime's fused QGemm adds such an int32 bias to the accumulator as it is,
    taking its scale to be s_x * s_w, which the 7-bit weights' doubled scales no longer are (8
    steps off on a Gemm); the f32 bias is the QDQ graph's value."""
    if len(user.input) < 3 or not user.input[2]:
        return
    deq = next((n for n in m.graph.node if n.op_type == "DequantizeLinear" and user.input[2] in n.output), None)
    if deq is None or deq.input[0] not in inits or deq.input[1] not in inits:
        return
    q = numpy_helper.to_array(inits[deq.input[0]])
    if q.dtype != np.int32:
        return
    z = numpy_helper.to_array(inits[deq.input[2]]) if len(deq.input) > 2 and deq.input[2] else np.zeros((), np.int32)
    value = ((q.astype(np.float64) - z) * numpy_helper.to_array(inits[deq.input[1]])).astype(np.float32)
    name = user.input[2] + "_f32"
    m.graph.initializer.append(numpy_helper.from_array(value, name))
    user.input[2] = name


def reference_model(path: Path) -> Path:
    """What ONNX Runtime should run to give the answer opforge computes for ``path`` here:
    ``path`` itself, or its seven_bit_copy on a host without VNNI (no_vnni.pairs_saturate(), unless
    OPFORGE_CPU_INT8_7BIT=0 keeps such layers in f32)."""
    from opforge_cpu.passes.int8.no_vnni import SEVEN_BIT, pairs_saturate

    if not (pairs_saturate() and SEVEN_BIT):
        return path
    path = Path(path)
    return seven_bit_copy(path, path.with_name(path.stem + ".7bit.onnx"))


def skip_s8_source_without_vnni(activation: str) -> None:
    """Skips a test of i8 activations on a host without VNNI (ONEDNN_MAX_CPU_ISA=AVX2 here) only
    while OPFORGE_CPU_INT8_S8_SHIFT=0 leaves s8 sources to oneDNN: its int8 convolutions and
    deconvolutions of an s8 source halve the weights once more in their weight reorder (the 0.5
    "scale adjust") on top of opforge's 7-bit rounding, 6-bit weights, 5-7 steps from ONNX Runtime
    on these blocks (stop 23). By default they read u8 bytes shifted by opforge
    (passes/int8/s8_shift.py) and hold the one-step checks."""
    from opforge_cpu.passes.int8.no_vnni import pairs_saturate
    from opforge_cpu.passes.int8.s8_shift import S8_SHIFT

    if activation == "i8" and pairs_saturate() and not S8_SHIFT:
        pytest.skip("no VNNI, OPFORGE_CPU_INT8_S8_SHIFT=0: oneDNN halves the weights of s8-source convolutions")


def run_both(path: Path, x: np.ndarray, seven_bit_reference: bool = True) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """opforge's and ONNX Runtime's output of ``path`` on ``x``, and opforge's profile rows. On a
    host whose int8 kernels add u8 x s8 pairs in saturating int16 (no VNNI: plain AVX2, or
    ONEDNN_MAX_CPU_ISA=AVX2 here) opforge rounds full-range weights to 7 bits (no_vnni.py), so
    ONNX Runtime runs the model with those 7-bit weights (seven_bit_copy): the one-step checks
    then hold there too, instead of failing by the 2-6 steps the rounding itself moves.
    ``seven_bit_reference=False``: ONNX Runtime runs ``path`` as it is (the full-range answer)."""
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer({0: x})[0])
    ref = reference_model(path) if seven_bit_reference else path
    sess = ort.InferenceSession(str(ref), providers=["CPUExecutionProvider"])
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


def assert_close_steps(got: np.ndarray, want: np.ndarray, step: float, exact_share: float = 0.99) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64)) / step
    assert diff.max() <= 1.0 + 1e-4, f"max difference {diff.max():.3f} quantization steps"
    assert np.mean(diff < 1e-4) >= exact_share, f"only {np.mean(diff < 1e-4):.3%} of the elements are exact"


def int8_steps(rows: list[Any], node_type: str) -> list[Any]:
    return [r for r in rows if r.node_type == node_type and r.status != "OPTIMIZED_OUT"]


def run_qdq_graph(path: Path, x: np.ndarray) -> np.ndarray:
    """ONNX Runtime on the QDQ graph as written (graph optimizations off: every DequantizeLinear,
    f32 op and QuantizeLinear run on their own, no QLinear* fusion): the QDQ arithmetic itself
    (of the 7-bit copy where opforge runs one: reference_model)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(reference_model(path)), so, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {sess.get_inputs()[0].name: x})[0])


def run_child(child: str, args: list[str], isa: str | None, switches: dict[str, str]) -> dict[str, Any]:
    """Runs the script ``child`` with ``args`` in a fresh Python under ``ONEDNN_MAX_CPU_ISA=isa``
    (none: the host's own ISA; the cap is read once a process, hence the child) and the given
    ``OPFORGE_CPU_INT8_*`` switches (any others of the parent's environment dropped); returns the
    JSON object of its last output line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ONEDNN_MAX_CPU_ISA", "OPFORGE_CPU_INT8_"))}
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    env |= switches
    done = subprocess.run([sys.executable, "-c", child, *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    res: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return res
