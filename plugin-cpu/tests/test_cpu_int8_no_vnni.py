"""Hosts without VNNI (plain AVX2, AVX-512 before Cascade Lake): oneDNN's u8 x s8 kernels add
products in pairs in saturating int16 there, so a convolution with full-range int8 weights
(ONNX Runtime's default) runs with its weights rounded to 7 bits (OPFORGE_CPU_INT8_7BIT=0: kept
in f32) rather than run wrong; 7-bit weights (reduce_range) and depthwise convolutions run as
they are. Each case runs in a child process with ONEDNN_MAX_CPU_ISA set, as such a host."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("onnxruntime.quantization")

from int8_testing import output_scale, quantize, run_child, save_model
from opforge_cpu.passes.int8.no_vnni import PAIR_SAFE_WEIGHT, seven_bit

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from int8_testing import run_both
    x = np.load(sys.argv[3])
    got, want, rows = run_both(sys.argv[2], x, seven_bit_reference=False)  # "steps": from the full-range answer
    np.save(sys.argv[5], got)
    ran = [r.node_type for r in rows if r.status != "OPTIMIZED_OUT"]
    print(json.dumps({"steps": float(np.max(np.abs(got.astype(np.float64) - want)) / float(sys.argv[4])), "ran": ran}))
""")


def _conv_block(tmp_path: Path, weight_scale: float) -> tuple[Path, np.ndarray]:
    """Two 3x3 convolutions with ReLU, quantized by ONNX Runtime (u8 activations, s8 per-channel
    weights: each channel's largest weight becomes +-127)."""
    rng = np.random.default_rng(5)
    shape = (1, 32, 12, 12)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["y"], pads=[1, 1, 1, 1])]
    inits = [numpy_helper.from_array((rng.standard_normal(s) * weight_scale).astype(np.float32), n)
             for n, s in (("w1", (32, 32, 3, 3)), ("w2", (16, 32, 3, 3)))]
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 12, 12])], inits, tmp_path / "f32.onnx")
    q = quantize(src, tmp_path / "q.onnx", shape, True, "u8")
    # large positive activations: the u8 values reach 255, where pairs saturate first
    x = np.abs(np.random.default_rng(6).standard_normal(shape)).astype(np.float32) * 3
    return q, x


def _run(q: Path, x: np.ndarray, tmp_path: Path, isa: str | None, **switches: str) -> dict[str, object]:
    """Runs ``q`` on opforge and ONNX Runtime in a child process; "got" is opforge's output."""
    np.save(tmp_path / "x.npy", x)
    got = tmp_path / f"got_{q.stem}_{isa}_{len(switches)}.npy"
    res: dict[str, object] = run_child(
        CHILD, [str(Path(__file__).parent), str(q), str(tmp_path / "x.npy"), str(output_scale(q)), str(got)], isa, switches)
    res["got"] = np.load(got)
    return res


def _seven_bit_copy(q: Path, dst: Path) -> Path:
    """``q`` with every weight initializer (int8, per output channel) replaced by what
    ``seven_bit`` makes of it: the model an exact int8 engine should agree with."""
    m = onnx.load(str(q))
    inits = {i.name: i for i in m.graph.initializer}
    for node in m.graph.node:
        if node.op_type != "DequantizeLinear" or node.input[0] not in inits:
            continue
        w = numpy_helper.to_array(inits[node.input[0]])
        if w.dtype != np.int8:
            continue
        s = numpy_helper.to_array(inits[node.input[1]])
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        assert s.ndim == 1, "per-channel weights only"  # halving channels apart needs a scale each
        w7, s7 = seven_bit(w, s, 1 if axis == 0 else -1)  # [C_out, ...] or a MatMul's [K, N]
        inits[node.input[0]].CopyFrom(numpy_helper.from_array(w7, node.input[0]))
        inits[node.input[1]].CopyFrom(numpy_helper.from_array(s7.reshape(s.shape), node.input[1]))
    onnx.save(m, str(dst))
    return dst


def test_full_range_weights_run_in_7_bits_without_vnni_and_do_not_saturate(tmp_path: Path) -> None:
    """The capped run (int8, weights rounded to 7 bits inside) gives the bytes that an exact
    engine (native VNNI) gives for the model with those 7-bit weights: no pair saturated, where
    the full-range weights in int16 pairs were 23-41 steps off. Against ONNX Runtime's
    full-range answer it is within the rounding of the weights."""
    q, x = _conv_block(tmp_path, 0.2)
    capped = _run(q, x, tmp_path, "AVX2")
    assert capped["ran"].count("QuantizedConvolution") == 2, capped["ran"]  # type: ignore[attr-defined]
    exact = _run(_seven_bit_copy(q, tmp_path / "q7.onnx"), x, tmp_path, None)
    assert exact["ran"].count("QuantizedConvolution") == 2, exact["ran"]  # type: ignore[attr-defined]
    step = output_scale(q)
    diff = np.abs(capped["got"].astype(np.float64) - exact["got"]) / step  # type: ignore[union-attr]
    assert diff.max() <= 1.0 + 1e-4 and np.mean(diff < 1e-4) >= 0.99, (diff.max(), np.mean(diff < 1e-4))
    # 4 steps on this block (weights rounded to 7 bits, then two layers): saturation was 23-41
    assert float(capped["steps"]) <= 6.0, capped["steps"]  # type: ignore[arg-type]


def test_full_range_matmul_weights_run_in_7_bits_without_vnni(tmp_path: Path) -> None:
    """A MatMul (oneDNN's gemm:jit under the cap) with all-positive full-range weights over u8
    values up to 255: the same check as the convolutions'."""
    rng = np.random.default_rng(12)
    shape = (16, 96)
    w = np.abs(rng.standard_normal((96, 40))).astype(np.float32) * 0.2
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 40])],
                     [numpy_helper.from_array(w, "w")], tmp_path / "mm.onnx")
    q = quantize(src, tmp_path / "mmq.onnx", shape, True, "u8")
    x = np.abs(np.random.default_rng(13).standard_normal(shape)).astype(np.float32) * 3
    capped = _run(q, x, tmp_path, "AVX2")
    assert "QuantizedMatMul" in capped["ran"], capped["ran"]  # type: ignore[operator]
    exact = _run(_seven_bit_copy(q, tmp_path / "mm7.onnx"), x, tmp_path, None)
    assert "QuantizedMatMul" in exact["ran"], exact["ran"]  # type: ignore[operator]
    step = output_scale(q)
    diff = np.abs(capped["got"].astype(np.float64) - exact["got"]) / step  # type: ignore[union-attr]
    assert diff.max() <= 1.0 + 1e-4 and np.mean(diff < 1e-4) >= 0.99, (diff.max(), np.mean(diff < 1e-4))
    assert float(capped["steps"]) <= 6.0, capped["steps"]  # type: ignore[arg-type]


def test_full_range_weights_stay_f32_with_the_7_bit_switch_off(tmp_path: Path) -> None:
    q, x = _conv_block(tmp_path, 0.2)
    res = _run(q, x, tmp_path, "AVX2", OPFORGE_CPU_INT8_7BIT="0")
    assert "QuantizedConvolution" not in res["ran"], res["ran"]  # type: ignore[operator]
    assert float(res["steps"]) <= 1.0 + 1e-4, res  # type: ignore[arg-type]


@pytest.mark.parametrize("isa", ["AVX2", "AVX512_CORE"])
def test_depthwise_keeps_full_range_weights_without_vnni(tmp_path: Path, isa: str) -> None:
    """oneDNN's int8 depthwise kernels do not saturate without VNNI (the AVX2 one multiplies in
    int32): all-positive full-range taps on u8 values up to 255 give the native (VNNI) bytes
    under the cap, one step from ONNX Runtime."""
    rng = np.random.default_rng(8)
    shape = (1, 48, 10, 10)
    w = np.abs(rng.standard_normal((48, 1, 3, 3))).astype(np.float32) * 0.5
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], group=48)]
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))],
                     [numpy_helper.from_array(w, "w")], tmp_path / "dw.onnx")
    q = quantize(src, tmp_path / "dwq.onnx", shape, True, "u8")
    x = np.abs(np.random.default_rng(9).standard_normal(shape)).astype(np.float32) * 3
    capped, native = _run(q, x, tmp_path, isa), _run(q, x, tmp_path, None)
    assert "QuantizedConvolution" in capped["ran"], capped["ran"]  # type: ignore[operator]
    np.testing.assert_array_equal(capped["got"], native["got"])  # type: ignore[arg-type]
    assert float(capped["steps"]) <= 1.0 + 1e-4, capped  # type: ignore[arg-type]
    # the same layer with the depthwise exemption off is rounded to 7 bits like the others
    off = _run(q, x, tmp_path, isa, OPFORGE_CPU_INT8_DW_FULL="0")
    assert "QuantizedConvolution" in off["ran"] and not np.array_equal(off["got"], native["got"])  # type: ignore[operator, arg-type]


@pytest.mark.parametrize("axes", [1, 2, -1])
def test_seven_bit_rounds_only_full_range_channels_within_one_step(axes: int) -> None:
    rng = np.random.default_rng(3)
    w = rng.integers(-128, 128, (4, 6, 5, 3), dtype=np.int16).astype(np.int8)
    lead = {1: (0,), 2: (0, 1), -1: (1,)}[axes]
    channels = int(np.prod([w.shape[a] for a in lead]))
    rows = (np.moveaxis(w, 1, 0) if axes == -1 else w).reshape(channels, -1).copy()
    rows[0] = np.clip(rows[0], -PAIR_SAFE_WEIGHT, PAIR_SAFE_WEIGHT)  # a channel already safe
    w = (np.moveaxis(rows.reshape(np.moveaxis(w, 1, 0).shape), 0, 1) if axes == -1
         else rows.reshape(w.shape)).astype(np.int8)
    scale = rng.uniform(0.01, 0.1, channels).astype(np.float32)
    w7, s7 = seven_bit(w, scale, axes)
    assert w7.shape == w.shape and w7.dtype == np.int8
    r7 = (np.moveaxis(w7, 1, 0) if axes == -1 else w7).reshape(channels, -1).astype(np.float64)
    np.testing.assert_array_equal(r7[0], rows[0])
    assert s7[0] == scale[0]
    np.testing.assert_allclose(s7[1:], scale[1:] * 2)
    assert np.abs(r7).max() <= PAIR_SAFE_WEIGHT
    err = r7[1:] * 2 - rows[1:]  # in the original steps: 0 for even weights, +-1 for odd ones
    assert np.abs(err).max() <= 1
    assert np.all(np.abs(err.sum(axis=1)) <= 1)  # the odd ones alternate down and up


def test_with_vnni_the_same_model_runs_in_int8(tmp_path: Path) -> None:
    q, x = _conv_block(tmp_path, 0.2)
    res = _run(q, x, tmp_path, "AVX2_VNNI")
    assert "QuantizedConvolution" in res["ran"], res["ran"]  # type: ignore[operator]
    assert float(res["steps"]) <= 1.0 + 1e-4, res  # type: ignore[arg-type]
