"""int8 execution on CPU (issue 15 item 2): QDQ models from ONNX Runtime's static quantizer and
QLinearConv/QLinearMatMul models run as QuantizedConvolution/QuantizedMatMul (oneDNN int8), and
agree with ONNX Runtime's own int8 execution.

Tolerance: one quantization step of the output (``scale``) per element. Both engines compute the
same integer sums exactly; they differ only in how the f32 requantization ``acc * s_x * s_w / s_y``
is rounded (oneDNN multiplies the scales in another order than ONNX Runtime's MLAS), so a value
within an f32 ulp of a .5 tie may round to the neighbouring integer. Most elements are exact;
the tests also check that at least 99 % are.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from opforge.errors import ShapeInferenceError
from opforge.graph import Node
from opforge.opset.constant import Constant
from opforge.opset.parameter import Parameter

ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")

from int8_testing import assert_close_steps, int8_steps, output_scale, quantize, run_both, save_model  # noqa: E402
from opforge_cpu.ops.quantized_convolution import QuantizedConvolution  # noqa: E402
from opforge_cpu.passes.int8 import int8_weights  # noqa: E402


# ------------------------------------------------------------------------------ model makers
def conv_model(path: Path, rng: np.random.Generator) -> Path:
    """Conv(+bias) -> Relu -> MaxPool -> depthwise Conv(+bias) -> Relu -> strided Conv: the three
    kinds of convolution a CNN quantizes, and a pooling between them."""
    w1 = (rng.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float32)
    b1 = (rng.standard_normal(16) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((16, 1, 3, 3)) * 0.3).astype(np.float32)
    b2 = (rng.standard_normal(16) * 0.1).astype(np.float32)
    w3 = (rng.standard_normal((12, 16, 1, 1)) * 0.2).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=16),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3"], ["y"], strides=[2, 2]),
    ]
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"), (w3, "w3"))]
    return save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12, 6, 6])], inits, path)


def matmul_model(path: Path, rng: np.random.Generator) -> Path:
    """MatMul + bias -> Relu -> Gemm (transB): a quantized MLP."""
    w1 = (rng.standard_normal((32, 24)) * 0.2).astype(np.float32)
    b1 = (rng.standard_normal(24) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((10, 24)) * 0.2).astype(np.float32)
    b2 = (rng.standard_normal(10) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"]),
        helper.make_node("Add", ["m1", "b1"], ["a1"]),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("Gemm", ["r1", "w2", "b2"], ["y"], transB=1),
    ]
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    return save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 32])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 10])], inits, path)


# ------------------------------------------------------------------------------ QDQ models
@pytest.mark.parametrize(("per_channel", "activation"), [(True, "u8"), (False, "u8"), (True, "i8")])
def test_qdq_convolutions_run_int8_and_match_onnxruntime(tmp_path: Path, per_channel: bool, activation: str) -> None:
    rng = np.random.default_rng(0)
    src = conv_model(tmp_path / "f32.onnx", rng)
    q = quantize(src, tmp_path / "q.onnx", (1, 8, 12, 12), per_channel, activation)
    x = np.random.default_rng(1).standard_normal((1, 8, 12, 12)).astype(np.float32)
    got, want, rows = run_both(q, x)
    assert_close_steps(got, want, output_scale(q))
    steps = int8_steps(rows, "QuantizedConvolution")
    assert len(steps) == 3, [(r.node_name, r.node_type) for r in rows]
    assert not [r for r in rows if r.node_type in ("Convolution", "GroupConvolution", "MaxPool")]
    assert len(int8_steps(rows, "QuantizedMaxPool")) == 1  # same scale on both sides: pooled in u8/i8
    # the first convolution took its bias Add and the QuantizeLinear after it (Divide, Round,
    # Add, Clamp, Convert): each reported as fused into it
    fused = [r.node_name for r in rows if r.status == "OPTIMIZED_OUT" and r.extra.get("fused_into") == steps[0].node_name]
    assert len(fused) >= 6 and any("QuantizeLinear" in name for name in fused), fused


@pytest.mark.parametrize("size", [7, 8])
def test_dequantize_of_a_blocked_int8_output(tmp_path: Path, size: int) -> None:
    """A 64-channel 1x1 convolution on an odd (and an even) spatial size: its u8 output is in a
    blocked layout, and the Dequantize after it must still subtract the non-zero zero point
    (oneDNN 3.2's reorder from a blocked u8 layout dropped it: every element was off by
    zero_point * scale)."""
    rng = np.random.default_rng(12)
    w = (rng.standard_normal((64, 64, 1, 1)) * 0.1).astype(np.float32)
    b = (rng.standard_normal(64) * 0.1).astype(np.float32)
    src = save_model([helper.make_node("Conv", ["x", "w", "b"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, size, size])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, size, size])],
                [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")], tmp_path / "f32.onnx")
    q = quantize(src, tmp_path / "q.onnx", (1, 64, size, size), True, "u8")
    x = np.random.default_rng(13).standard_normal((1, 64, size, size)).astype(np.float32)
    got, want, rows = run_both(q, x)
    assert_close_steps(got, want, output_scale(q))
    assert len(int8_steps(rows, "QuantizedConvolution")) == 1 and len(int8_steps(rows, "Dequantize")) == 1


def test_residual_add_runs_as_the_convolution_sum(tmp_path: Path) -> None:
    """conv -> relu -> conv, plus the block's input, -> relu: a ResNet block. The residual Add
    (dequantize both operands, add, quantize) goes into the second convolution as oneDNN's sum
    post-op. That skips the rounding of the convolution's own result to u8, so the output may
    differ from ONNX Runtime's by one step (and no more) where that rounding decided it."""
    rng = np.random.default_rng(14)
    w1 = (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["x"], ["xr"]),
        helper.make_node("Add", ["c2", "xr"], ["s"]),
        helper.make_node("Relu", ["s"], ["y"]),
    ]
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 9, 9])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 9, 9])],
                [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")], tmp_path / "f32.onnx")
    q = quantize(src, tmp_path / "q.onnx", (1, 16, 9, 9), True, "u8")
    x = np.random.default_rng(15).standard_normal((1, 16, 9, 9)).astype(np.float32)
    got, want, rows = run_both(q, x)
    diff = np.abs(got.astype(np.float64) - want) / output_scale(q)
    assert diff.max() <= 1.0 + 1e-4, f"max difference {diff.max():.3f} quantization steps"
    # (measured: 72 % exact; the rest one step away, the skipped rounding's half step)
    assert np.mean(diff < 1e-4) >= 0.6
    steps = int8_steps(rows, "QuantizedConvolution")
    assert len(steps) == 2 and not [r for r in rows if r.node_type == "Add" and r.status != "OPTIMIZED_OUT"]
    fused = [r.node_name for r in rows if r.status == "OPTIMIZED_OUT" and r.extra.get("fused_into") == steps[1].node_name]
    # (the quantizer renamed the Add's output: its node is "<output>/Add")
    assert [n for n in fused if n.endswith("/Add") and "QuantizeLinear/" not in n], fused


@pytest.mark.parametrize(("per_channel", "activation"), [(True, "u8"), (False, "i8")])
def test_qdq_matmuls_run_int8_and_match_onnxruntime(tmp_path: Path, per_channel: bool, activation: str) -> None:
    rng = np.random.default_rng(2)
    src = matmul_model(tmp_path / "f32.onnx", rng)
    q = quantize(src, tmp_path / "q.onnx", (6, 32), per_channel, activation)
    x = np.random.default_rng(3).standard_normal((6, 32)).astype(np.float32)
    got, want, rows = run_both(q, x)
    assert_close_steps(got, want, output_scale(q))
    assert len(int8_steps(rows, "QuantizedMatMul")) == 2
    assert not [r for r in rows if r.node_type == "MatMul"]


def test_weights_dequantized_at_run_time_run_int8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights too large to fold while converting (a VGG's 100M-weight FC layers: over the
    folding limits) stay DequantizeLinear(constant s8) in the graph; the int8 MatMul reads the s8
    values and scales from there. The limits are lowered here so that a small model has such
    weights (w1, 3 KiB) next to folded ones (w2, under 1 KiB)."""
    import opforge.frontend.node_context as node_context
    import opforge.planning.folding as planning_folding
    import opforge.transformations.constant_folding as constant_folding

    for module, name in ((node_context, "FOLD_ON_CREATE_BYTES"), (constant_folding, "MAX_FOLDED_BYTES"),
                         (planning_folding, "MAX_FOLDED_BYTES")):
        monkeypatch.setattr(module, name, 1024)
    src = matmul_model(tmp_path / "f32.onnx", np.random.default_rng(2))
    q = quantize(src, tmp_path / "q.onnx", (6, 32), True, "u8")
    x = np.random.default_rng(3).standard_normal((6, 32)).astype(np.float32)
    got, want, rows = run_both(q, x)
    assert_close_steps(got, want, output_scale(q))
    assert len(int8_steps(rows, "QuantizedMatMul")) == 2
    assert not [r for r in rows if r.node_type in ("MatMul", "Convert", "Multiply") and r.status != "OPTIMIZED_OUT"]


# ------------------------------------------------------------------------------ QLinear models
def _qlinear_conv(path: Path, group: int) -> Path:
    rng = np.random.default_rng(4)
    cin, cout = 8, 8 if group > 1 else 12
    w = rng.integers(-127, 128, (cout, cin // group, 3, 3), dtype=np.int8)
    w_scale = (rng.uniform(0.002, 0.01, cout)).astype(np.float32)
    bias = rng.integers(-2000, 2000, cout, dtype=np.int32)
    y_scale = 0.5
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "xs"), numpy_helper.from_array(np.array(120, np.uint8), "xz"),
        numpy_helper.from_array(w, "w"), numpy_helper.from_array(w_scale, "ws"),
        numpy_helper.from_array(np.zeros(cout, np.int8), "wz"),
        numpy_helper.from_array(np.array(y_scale, np.float32), "ys"),
        numpy_helper.from_array(np.array(100, np.uint8), "yz"),
        numpy_helper.from_array(bias, "b"),
    ]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[1, 1, 1, 1], group=group)
    return save_model([node], [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, cin, 10, 10])],
                 [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, cout, 10, 10])], inits, path)


@pytest.mark.parametrize("group", [1, 8])
def test_qlinear_conv_runs_int8_and_matches_onnxruntime(tmp_path: Path, group: int) -> None:
    path = _qlinear_conv(tmp_path / "qlc.onnx", group)
    x = np.random.default_rng(5).integers(0, 256, (1, 8, 10, 10), dtype=np.uint8)
    got, want, rows = run_both(path, x)
    assert got.dtype == np.uint8
    assert_close_steps(got, want, 1.0)
    assert len(int8_steps(rows, "QuantizedConvolution")) == 1


def test_qlinear_matmul_runs_int8_and_matches_onnxruntime(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    b = rng.integers(-128, 128, (20, 16), dtype=np.int8)
    inits = [
        numpy_helper.from_array(np.array(0.03, np.float32), "as"), numpy_helper.from_array(np.array(7, np.int8), "az"),
        numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.array(0.004, np.float32), "bs"),
        numpy_helper.from_array(np.array(0, np.int8), "bz"),
        numpy_helper.from_array(np.array(0.2, np.float32), "ys"), numpy_helper.from_array(np.array(-5, np.int8), "yz"),
    ]
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    path = save_model([node], [helper.make_tensor_value_info("a", TensorProto.INT8, [5, 20])],
                 [helper.make_tensor_value_info("y", TensorProto.INT8, [5, 16])], inits, tmp_path / "qlm.onnx")
    x = rng.integers(-128, 128, (5, 20), dtype=np.int8)
    got, want, rows = run_both(path, x)
    assert got.dtype == np.int8
    assert_close_steps(got, want, 1.0)
    assert len(int8_steps(rows, "QuantizedMatMul")) == 1


# ------------------------------------------------------------------------------ what stays f32
def test_float_weights_that_are_not_int8_stay_f32(tmp_path: Path) -> None:
    """A dequantized activation convolved with ordinary f32 weights: no lossless int8 form, so
    the f32 convolution runs (and the result equals ONNX Runtime's)."""
    rng = np.random.default_rng(8)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(3, np.uint8), "z"),
             numpy_helper.from_array(w, "w")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("Conv", ["d", "w"], ["y"])]
    path = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])], inits, tmp_path / "m.onnx")
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    got, want, rows = run_both(path, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert not int8_steps(rows, "QuantizedConvolution")
    assert [r for r in rows if r.node_type == "Convolution"]


def test_int8_weights_recovers_exact_scales_only() -> None:
    rng = np.random.default_rng(9)
    q = rng.integers(-127, 128, (6, 50)).astype(np.int8)
    q[:, 0] = 127  # per-channel symmetric: each row reaches the range
    per_channel = rng.uniform(1e-3, 1e-1, 6).astype(np.float32)
    w = (q.astype(np.float32) * per_channel[:, None]).astype(np.float32)
    got = int8_weights(w)
    assert got is not None
    np.testing.assert_array_equal(got[0], q)
    np.testing.assert_allclose(got[1], per_channel, rtol=1e-6)
    # per tensor: one scale, only one row reaches 127
    q2 = rng.integers(-60, 61, (4, 30)).astype(np.int8)
    q2[2, 5] = -127
    w2 = (q2.astype(np.float32) * np.float32(0.013)).astype(np.float32)
    got2 = int8_weights(w2)
    assert got2 is not None
    np.testing.assert_array_equal(got2[0], q2)
    # ordinary weights, and weights one ulp-scale perturbation away from int8, are refused
    assert int8_weights(rng.standard_normal((4, 30)).astype(np.float32)) is None
    w3 = w.copy()
    w3[0, 3] += per_channel[0] * 0.25
    assert int8_weights(w3) is None


def test_quantized_op_refuses_wrong_element_types() -> None:
    x = Node.create(Parameter, [], {"element_type": "f32", "shape": [1, 2, 4, 4]}, name="x")
    w = Node.create(Constant, [], {"value": np.zeros((2, 2, 1, 1), np.int8)}, name="w")
    s = Node.create(Constant, [], {"value": np.ones(2, np.float32)}, name="s")
    attrs = {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1], "src_scale": 0.1}
    with pytest.raises(ShapeInferenceError, match=r"node 'qc' \(QuantizedConvolution\): input 0 \(data\) is f32, expected u8 or i8"):
        Node.create(QuantizedConvolution, [x.output(0), w.output(0), s.output(0)], attrs, name="qc")
