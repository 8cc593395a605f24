"""s8 (signed) activations on hosts without VNNI (passes/int8/s8_shift.py): oneDNN's int8
convolutions and deconvolutions halve the weights once more for an s8 source there (6-bit
weights on top of the 7-bit rounding), so opforge gives them u8 bytes shifted by 128 with the
zero point moved. Each case runs natively and under ONEDNN_MAX_CPU_ISA=AVX2 (and AVX512_CORE:
AVX-512 without VNNI) in a child process, against ONNX Runtime on the model opforge runs there
(the 7-bit copy without VNNI, int8_testing.reference_model): every output within one
quantization step, at least 99 % exact, as for u8 activations."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("onnxruntime.quantization")

from int8_testing import quantize, run_child, save_model, seven_bit_copy

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from int8_testing import output_scale, run_both
    got, want, rows = run_both(sys.argv[2], np.load(sys.argv[3]))
    np.save(sys.argv[4], got)
    d = np.abs(got.astype(np.float64) - want) / output_scale(sys.argv[2])
    live = [r for r in rows if r.status != "OPTIMIZED_OUT"]
    print(json.dumps({"steps": float(d.max()), "exact": float(np.mean(d < 1e-4)),
                      "ran": [r.node_type for r in live],
                      "shift_tables": sum(r.node_name.endswith("/s8_to_u8") for r in live)}))
""")


def _run(q: Path, x: np.ndarray, tmp_path: Path, isa: str | None, **switches: str) -> dict[str, Any]:
    """``q`` on opforge and ONNX Runtime (reference_model) in a child process; "got" is
    opforge's output, "steps"/"exact" the comparison."""
    np.save(tmp_path / "x.npy", x)
    got = tmp_path / f"got_{q.stem}_{isa}_{'_'.join(switches.values())}.npy"
    res = run_child(CHILD, [str(Path(__file__).parent), str(q), str(tmp_path / "x.npy"), str(got)], isa, switches)
    res["got"] = np.load(got)
    return res


def _w(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> Any:
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)


def _layer(kind: str, tmp_path: Path) -> tuple[Path, tuple[int, ...], str]:
    """One layer (f32 ONNX) with an s8-sensitive shape: its file, input shape and the quantized
    op opforge should run it as."""
    rng = np.random.default_rng(41)
    x = "x"
    shape: tuple[int, ...]
    out: list[int]
    if kind == "conv":  # padded: the border must read the shifted zero point
        shape, out = (1, 16, 10, 10), [1, 24, 10, 10]
        nodes = [helper.make_node("Conv", [x, "w", "b"], ["y"], pads=[1, 1, 1, 1])]
        inits = [_w(rng, "w", (24, 16, 3, 3)), _w(rng, "b", (24,))]
        op = "QuantizedConvolution"
    elif kind == "depthwise":
        shape, out = (1, 32, 9, 9), [1, 32, 9, 9]
        nodes = [helper.make_node("Conv", [x, "w"], ["y"], pads=[1, 1, 1, 1], group=32)]
        inits = [_w(rng, "w", (32, 1, 3, 3))]
        op = "QuantizedConvolution"
    elif kind == "grouped":
        shape, out = (1, 32, 8, 8), [1, 32, 8, 8]
        nodes = [helper.make_node("Conv", [x, "w"], ["y"], pads=[1, 1, 1, 1], group=4)]
        inits = [_w(rng, "w", (32, 8, 3, 3))]
        op = "QuantizedConvolution"
    elif kind == "conv_transpose":
        shape, out = (1, 16, 7, 9), [1, 12, 13, 17]
        nodes = [helper.make_node("ConvTranspose", [x, "w", "b"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)]
        inits = [_w(rng, "w", (16, 12, 3, 3)), _w(rng, "b", (12,))]
        op = "QuantizedConvolutionBackpropData"
    elif kind == "matmul":
        shape, out = (2, 16, 96), [2, 16, 40]
        nodes = [helper.make_node("MatMul", [x, "w"], ["y"])]
        inits = [_w(rng, "w", (96, 40))]
        op = "QuantizedMatMul"
    elif kind == "gemm":
        shape, out = (16, 96), [16, 40]
        nodes = [helper.make_node("Gemm", [x, "w", "b"], ["y"], transB=1)]
        inits = [_w(rng, "w", (40, 96)), _w(rng, "b", (40,))]
        op = "QuantizedMatMul"
    else:
        raise ValueError(kind)
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits, tmp_path / f"{kind}.onnx")
    return src, shape, op


@pytest.mark.parametrize("isa", [None, "AVX2", "AVX512_CORE"])
@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("kind", ["conv", "depthwise", "grouped", "conv_transpose", "matmul", "gemm"])
def test_s8_activation_layer_agrees_with_onnx_runtime(tmp_path: Path, kind: str, per_channel: bool, isa: str | None) -> None:
    """One layer of s8 activations (N(0, 1) inputs: the source zero point is near 0, padding
    reads it), quantized by ONNX Runtime with per-channel or per-tensor s8 weights. Without the
    shift the capped convolutions were 2-5 steps off (depthwise 2, dense and grouped 4-5,
    ConvTranspose 4: 6-bit weights). oneDNN's int8 matmul is exact on s8 sources but slow on
    AVX2; it gets the shifted bytes too. No shift table: the Quantize writes them."""
    src, shape, op = _layer(kind, tmp_path)
    q = quantize(src, tmp_path / f"{kind}_q.onnx", shape, per_channel, "i8")
    x = np.random.default_rng(42).standard_normal(shape).astype(np.float32)
    res = _run(q, x, tmp_path, isa)
    assert op in res["ran"], res["ran"]
    assert res["steps"] <= 1.0 + 1e-4 and res["exact"] >= 0.99, (res["steps"], res["exact"])
    assert res["shift_tables"] == 0, res  # the Quantize writes the shifted bytes itself


def test_switch_off_keeps_the_six_bit_weights(tmp_path: Path) -> None:
    """OPFORGE_CPU_INT8_S8_SHIFT=0: the capped convolution reads the s8 tensor and oneDNN halves
    its weights again (the stop 23 behaviour, precision.md: several steps off); natively the
    switch changes no byte (the pass runs only without VNNI)."""
    src, shape, _ = _layer("conv", tmp_path)
    q = quantize(src, tmp_path / "conv_q.onnx", shape, True, "i8")
    x = np.random.default_rng(42).standard_normal(shape).astype(np.float32)
    off = _run(q, x, tmp_path, "AVX2", OPFORGE_CPU_INT8_S8_SHIFT="0")
    assert off["steps"] >= 2.0, off["steps"]
    on = _run(q, x, tmp_path, "AVX2")
    assert on["steps"] <= 1.0 + 1e-4, on["steps"]
    native_on = _run(q, x, tmp_path, None)
    native_off = _run(q, x, tmp_path, None, OPFORGE_CPU_INT8_S8_SHIFT="0")
    np.testing.assert_array_equal(native_on["got"], native_off["got"])


def _network(tmp_path: Path) -> tuple[Path, tuple[int, ...]]:
    """A small CNN with what lies between convolutions: max pooling, a residual Add, a table
    (Sigmoid) read beside a convolution of the same tensor, a concatenation, a global average
    pool and a Gemm classifier."""
    rng = np.random.default_rng(43)
    shape = (1, 8, 12, 12)
    mk = helper.make_node
    nodes = [
        mk("Conv", ["x", "wa"], ["ca"], pads=[1, 1, 1, 1]), mk("Relu", ["ca"], ["ra"]),
        mk("MaxPool", ["ra"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        mk("Conv", ["p", "wb"], ["cb"], pads=[1, 1, 1, 1]),
        mk("Sigmoid", ["cb"], ["sg"]),
        mk("Conv", ["cb", "wc"], ["cc"]),
        mk("Conv", ["sg", "wd"], ["cd"]),
        mk("Add", ["cc", "p"], ["res"]),
        mk("Mul", ["cd", "cb"], ["prod"]),
        mk("Concat", ["res", "prod"], ["cat"], axis=1),
        mk("Conv", ["cat", "we"], ["ce"], pads=[1, 1, 1, 1]), mk("Relu", ["ce"], ["re"]),
        mk("Resize", ["re", "", "scales"], ["rz"], mode="linear"),
        mk("GlobalAveragePool", ["rz"], ["g"]), mk("Flatten", ["g"], ["f"]),
        mk("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    inits = [_w(rng, "wa", (16, 8, 3, 3)), _w(rng, "wb", (16, 16, 3, 3)), _w(rng, "wc", (16, 16, 1, 1)),
             _w(rng, "wd", (16, 16, 1, 1)), _w(rng, "we", (16, 32, 3, 3)), _w(rng, "wf", (10, 16)), _w(rng, "bf", (10,)),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits, tmp_path / "net.onnx")
    return src, shape


@pytest.mark.parametrize("isa", [None, "AVX2"])
def test_network_shifts_its_s8_tensors_without_extra_passes(tmp_path: Path, isa: str | None) -> None:
    """Every s8 tensor of the network becomes u8 where it is written (the Quantize, the
    requantizing convolutions, the table's entries, the Multiply, the concatenation, the resize;
    the pools pass it on): no shift table runs, and the output stays within one step of ONNX
    Runtime on the 7-bit model. Capped, the bytes are native opforge's on that 7-bit model
    exactly (switch off: 4 steps off)."""
    src, shape = _network(tmp_path)
    q = quantize(src, tmp_path / "net_q.onnx", shape, True, "i8")
    x = np.random.default_rng(44).standard_normal(shape).astype(np.float32)
    res = _run(q, x, tmp_path, isa)
    ran = res["ran"]
    assert ran.count("QuantizedConvolution") == 5, ran
    assert {"QuantizedLookup", "QuantizedConcat", "QuantizedEltwise", "QuantizedInterpolate", "QuantizedMaxPool",
            "QuantizedAvgPool", "QuantizedMatMul"} <= set(ran), ran
    assert res["shift_tables"] == 0, ran
    assert res["steps"] <= 1.0 + 1e-4, res["steps"]
    if isa is not None:
        exact = _run(seven_bit_copy(q, tmp_path / "net_q7.onnx"), x, tmp_path, None)
        np.testing.assert_array_equal(res["got"], exact["got"])


def test_shufflenet_unit_shifts_through_split_and_channel_shuffle(tmp_path: Path) -> None:
    """A ShuffleNetV2 unit: Split of the channels, a convolution branch, Concat, the channel
    shuffle (Reshape, Transpose, Reshape) on the bytes, a convolution. The split halves and the
    shuffled tensor are element moves of shifted bytes: no shift table, and capped the bytes are
    native opforge's on the 7-bit model."""
    rng = np.random.default_rng(47)
    shape = (1, 16, 8, 8)
    mk = helper.make_node
    nodes = [
        mk("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
        mk("Split", ["c0", "halves"], ["s0", "s1"], axis=1),
        mk("Conv", ["s1", "w1"], ["c1"], pads=[1, 1, 1, 1]), mk("Relu", ["c1"], ["r1"]),
        mk("Concat", ["s0", "r1"], ["cat"], axis=1),
        mk("Reshape", ["cat", "grouped"], ["g"]), mk("Transpose", ["g"], ["t"], perm=[0, 2, 1, 3, 4]),
        mk("Reshape", ["t", "flat"], ["sh"]),
        mk("Conv", ["sh", "w2"], ["y"], pads=[1, 1, 1, 1]),
    ]
    inits = [_w(rng, "w0", (16, 16, 3, 3)), _w(rng, "w1", (8, 8, 3, 3)), _w(rng, "w2", (8, 16, 3, 3)),
             numpy_helper.from_array(np.array([8, 8], np.int64), "halves"),
             numpy_helper.from_array(np.array([1, 2, 8, 8, 8], np.int64), "grouped"),
             numpy_helper.from_array(np.array([1, 16, 8, 8], np.int64), "flat")]
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], inits, tmp_path / "unit.onnx",
                     opset=18)
    q = quantize(src, tmp_path / "unit_q.onnx", shape, True, "i8")
    x = np.random.default_rng(48).standard_normal(shape).astype(np.float32)
    capped = _run(q, x, tmp_path, "AVX2")
    assert capped["shift_tables"] == 0 and capped["ran"].count("QuantizedConvolution") == 3, capped["ran"]
    assert "Dequantize" in capped["ran"] and capped["ran"].count("Quantize") == 1, capped["ran"]
    assert capped["steps"] <= 1.0 + 1e-4 and capped["exact"] >= 0.99, (capped["steps"], capped["exact"])
    exact = _run(seven_bit_copy(q, tmp_path / "unit_q7.onnx"), x, tmp_path, None)
    np.testing.assert_array_equal(capped["got"], exact["got"])


def test_s8_model_output_keeps_its_bytes_and_the_reader_shifts_through_a_table(tmp_path: Path) -> None:
    """QLinearConv -> an int8 model output that a second QLinearConv also reads: that tensor must
    keep its s8 bytes, so without VNNI the second convolution reads it through one shift table
    (QuantizedLookup s8 -> u8). Both outputs match the native run exactly (the weights are within
    +-64, so no 7-bit rounding: the native bytes are ONNX Runtime's QLinearConv's)."""
    rng = np.random.default_rng(45)
    shape = (1, 8, 9, 9)
    w1 = rng.integers(-64, 65, (16, 8, 3, 3)).astype(np.int8)
    w2 = rng.integers(-64, 65, (8, 16, 3, 3)).astype(np.int8)

    def c(v: Any, name: str, t: type = np.float32) -> Any:
        return numpy_helper.from_array(np.asarray(v, t), name)

    inits = [c(0.05, "sx"), c(3, "zx", np.int8), c(0.01, "sw"), c(0, "zw", np.int8), c(w1, "w1", np.int8),
             c(w2, "w2", np.int8), c(0.08, "s1"), c(-5, "z1", np.int8), c(0.1, "s2"), c(2, "z2", np.int8)]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["qx"]),
        helper.make_node("QLinearConv", ["qx", "sx", "zx", "w1", "sw", "zw", "s1", "z1"], ["y1"], pads=[1, 1, 1, 1]),
        helper.make_node("QLinearConv", ["y1", "s1", "z1", "w2", "sw", "zw", "s2", "z2"], ["q2"], pads=[1, 1, 1, 1]),
        helper.make_node("DequantizeLinear", ["q2", "s2", "z2"], ["y2"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 8, 9, 9]),
                           helper.make_tensor_value_info("y1", TensorProto.INT8, [1, 16, 9, 9])], inits)
    path = tmp_path / "qlinear.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    x = (np.random.default_rng(46).standard_normal(shape) * 2).astype(np.float32)
    capped, native = _run(path, x, tmp_path, "AVX2"), _run(path, x, tmp_path, None)
    assert capped["shift_tables"] == 1 and native["shift_tables"] == 0, (capped["ran"], native["ran"])
    assert capped["ran"].count("QuantizedConvolution") == 2, capped["ran"]
    np.testing.assert_array_equal(capped["got"], native["got"])
    assert native["steps"] <= 1.0 + 1e-4, native["steps"]
