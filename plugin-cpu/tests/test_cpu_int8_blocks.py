"""int8 execution of what sits between the quantized convolutions of a CNN (issue 15): the
concatenations of GoogLeNet/Inception/SqueezeNet/DenseNet blocks run on the u8/i8 tensors
(QuantizedConcat), and still agree with ONNX Runtime's int8 execution within one quantization
step of the output (see test_cpu_int8.py for why one step)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("onnxruntime.quantization")

from int8_testing import assert_close_steps, int8_steps, output_scale, quantize, run_both, save_model
from opforge_cpu.ops.quantized_concat import QuantizedConcat
from opforge_cpu.ops.quantized_concat import QuantizedConcatAttrs as ConcatAttrs


def _inits(rng: np.random.Generator, **shapes: tuple[int, ...]) -> list[object]:
    return [numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n) for n, s in shapes.items()]


@pytest.mark.parametrize("axis", [1, 2])
def test_concat_of_quantized_branches_runs_on_the_integers(tmp_path: Path, axis: int) -> None:
    """An inception block: a 1x1 and a 3x3 convolution branch and a max-pooled branch of the input,
    concatenated (each branch on its own scale) and read by a 1x1 convolution. Along the channels
    the concatenation is written channels-last (what the convolutions read), along the height in
    the plain layout."""
    rng = np.random.default_rng(21)
    shape = (1, 8, 10, 10)
    c_cat = 24 if axis == 1 else 8
    nodes = [
        helper.make_node("Conv", ["x", "wa"], ["ca"]),
        helper.make_node("Relu", ["ca"], ["ra"]),
        helper.make_node("Conv", ["x", "wb"], ["cb"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["cb"], ["rb"]),
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Concat", ["ra", "rb", "p"], ["cat"], axis=axis),
        helper.make_node("Conv", ["cat", "wc"], ["y"]),
    ]
    c_branch = (6, 10) if axis == 1 else (8, 8)
    inits = _inits(rng, wa=(c_branch[0], 8, 1, 1), wb=(c_branch[1], 8, 3, 3), wc=(12, c_cat, 1, 1))
    out_shape = [1, 12, 10, 10] if axis == 1 else [1, 12, 30, 10]
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits, tmp_path / "f32.onnx")
    q = quantize(src, tmp_path / "q.onnx", shape, True, "u8")
    x = np.random.default_rng(22).standard_normal(shape).astype(np.float32)
    got, want, rows = run_both(q, x)
    assert_close_steps(got, want, output_scale(q))
    cat = int8_steps(rows, "QuantizedConcat")
    assert len(cat) == 1 and not int8_steps(rows, "Concat"), [(r.node_name, r.node_type) for r in rows]
    # only the model input is quantized and only the output dequantized: no f32 tensor in between
    assert [r.node_type for r in rows if r.node_type in ("Quantize", "Dequantize") and r.status != "OPTIMIZED_OUT"] \
        == ["Quantize", "Dequantize"]
    # along the channels the branches' channels-last outputs are read in place
    assert cat[0].exec_type.startswith("reorder+") == (axis != 1), cat[0].exec_type


def test_quantized_concat_reference_is_the_qdq_arithmetic() -> None:
    """Each input dequantized in f32, divided by the output scale, rounded half to even, shifted
    and saturated: a value on the output's grid stays, ties go to even, the range saturates."""
    a = np.array([[0, 10, 255]], np.uint8)
    b = np.array([[-128, 1, 127]], np.int8)
    attrs = ConcatAttrs(axis=1, scales=[0.5, 0.25], zero_points=[10, 0], dst_scale=0.5, dst_zero_point=10, output_type="u8")
    y = QuantizedConcat.evaluate(attrs, [a, b])[0]
    # b: -128*0.25/0.5 = -64 -> -54 -> 0 (saturated); 1*0.25/0.5 = 0.5 -> 0 (even) -> 10; 63.5 -> 64 -> 74
    np.testing.assert_array_equal(y, np.array([[0, 10, 255, 0, 10, 74]], np.uint8))
