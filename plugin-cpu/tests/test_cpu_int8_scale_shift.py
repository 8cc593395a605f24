"""int8 batch normalisation between quantized tensors (issue 15, stop 21): DequantizeLinear ->
BatchNormalization [-> Relu] -> QuantizeLinear, DenseNet's pre-activation BN after every
concatenation, runs as one QuantizedScaleShift over the u8/i8 bytes (channels-last between the
quantized convolutions) and gives the bytes of the Dequantize, BatchNormInference and Quantize
kernels it replaces (OPFORGE_CPU_INT8_SCALE_SHIFT=0), and ONNX Runtime's within one step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import opforge
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("onnxruntime.quantization")

from int8_testing import assert_close_steps, int8_steps, output_scale, quantize, run_both, save_model
from opforge_cpu.ops.quantized_scale_shift import (
    QuantizedScaleShift,
    QuantizedScaleShiftAttrs,
    batch_norm_scale_shift,
)

SWITCH = "OPFORGE_CPU_INT8_SCALE_SHIFT"


def _bn_params(rng: np.random.Generator, c: int, prefix: str = "") -> list[object]:
    values = {"gamma": rng.uniform(0.5, 1.5, c), "beta": rng.standard_normal(c) * 0.2,
              "mean": rng.standard_normal(c) * 0.2, "var": rng.uniform(0.5, 1.5, c)}
    return [numpy_helper.from_array(v.astype(np.float32), prefix + k) for k, v in values.items()]


def _bn(x: str, y: str, prefix: str = "", epsilon: float = 1e-5) -> object:
    return helper.make_node("BatchNormalization", [x, *(prefix + k for k in ("gamma", "beta", "mean", "var"))], [y],
                            epsilon=epsilon)


def _run(path: Path, x: np.ndarray) -> tuple[np.ndarray, list[object]]:
    core = opforge.Core()
    req = core.compile_model(core.read_model(str(path)), "CPU", {"ENABLE_PROFILING": True}).create_infer_request()
    return np.asarray(req.infer({0: x})[0]), list(req.get_profiling_info())


@pytest.mark.parametrize("activation", ["u8", "i8"])
def test_densenet_block_batch_norm_runs_on_the_integers(tmp_path: Path, activation: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A DenseNet dense layer quantized by ONNX Runtime: two convolution branches concatenated,
    BN -> ReLU -> 1x1 convolution. The BN runs on the concatenation's channels-last bytes, read in
    place, and the 1x1 convolution reads its channels-last output: no Dequantize, no f32 tensor,
    no reorder in between."""
    rng = np.random.default_rng(41)
    shape = (1, 8, 10, 10)
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["a"]),
        helper.make_node("Conv", ["a", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["b"]),
        helper.make_node("Concat", ["a", "b"], ["cat"], axis=1),
        _bn("cat", "n"),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["y"]),
    ]
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), k)
             for k, s in (("w0", (16, 8, 3, 3)), ("w1", (16, 16, 3, 3)), ("w2", (12, 32, 1, 1)))]
    inits += _bn_params(rng, 32)
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12, 10, 10])], inits, tmp_path / "f32.onnx")
    q = quantize(src, tmp_path / "q.onnx", shape, True, activation)
    x = np.random.default_rng(42).standard_normal(shape).astype(np.float32)
    got, want, rows = run_both(q, x)
    assert_close_steps(got, want, output_scale(q))
    ran = [r.node_type for r in rows if r.status != "OPTIMIZED_OUT"]
    steps = int8_steps(rows, "QuantizedScaleShift")
    assert len(steps) == 1 and "BatchNormInference" not in ran, ran
    assert ran.count("Quantize") == 1 and ran.count("Dequantize") == 1, ran  # the model's input and output
    assert steps[0].exec_type.startswith("loop:nhwc"), steps[0].exec_type
    # the off switch: Dequantize, BatchNormInference and Quantize kernels, the same bytes
    monkeypatch.setenv(SWITCH, "0")
    off, off_rows = _run(q, x)
    assert "BatchNormInference" in [r.node_type for r in off_rows if r.status != "OPTIMIZED_OUT"]
    assert not int8_steps(off_rows, "QuantizedScaleShift")
    np.testing.assert_array_equal(got, off)


def _qdq_bn_model(path: Path, c: int, src: tuple[float, int, str], dst: tuple[float, int, str], relu: bool,
                  dequantize_output: bool, params: dict[str, np.ndarray] | None = None, epsilon: float = 1e-5,
                  hw: tuple[int, int] = (5, 7)) -> Path:
    """x -> QuantizeLinear -> DequantizeLinear -> BatchNormalization [-> Relu] -> QuantizeLinear
    [-> DequantizeLinear], written by hand (grids and types chosen, the Relu kept)."""
    zt = {"u8": TensorProto.UINT8, "i8": TensorProto.INT8}
    inits = [helper.make_tensor("s0", TensorProto.FLOAT, [], [src[0]]), helper.make_tensor("z0", zt[src[2]], [], [src[1]]),
             helper.make_tensor("s1", TensorProto.FLOAT, [], [dst[0]]), helper.make_tensor("z1", zt[dst[2]], [], [dst[1]])]
    if params is None:
        inits += _bn_params(np.random.default_rng(43 + c), c)
    else:
        inits += [numpy_helper.from_array(v.astype(np.float32), k) for k, v in params.items()]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s0", "z0"], ["q0"]),
             helper.make_node("DequantizeLinear", ["q0", "s0", "z0"], ["d0"]),
             _bn("d0", "n", epsilon=epsilon)]
    last = "n"
    if relu:
        nodes.append(helper.make_node("Relu", ["n"], ["r"]))
        last = "r"
    nodes.append(helper.make_node("QuantizeLinear", [last, "s1", "z1"], ["q1" if dequantize_output else "y"]))
    if dequantize_output:
        nodes.append(helper.make_node("DequantizeLinear", ["q1", "s1", "z1"], ["y"]))
    out_type = TensorProto.FLOAT if dequantize_output else zt[dst[2]]
    shape = [1, c, *hw]
    return save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                      [helper.make_tensor_value_info("y", out_type, shape)], inits, path)


def _quantized(x: np.ndarray, scale: float, zero_point: int, t: str) -> np.ndarray:
    dt = np.uint8 if t == "u8" else np.int8
    info = np.iinfo(dt)
    return np.clip(np.rint(x / np.float32(scale)) + zero_point, info.min, info.max).astype(dt)


@pytest.mark.parametrize(("c", "src", "dst", "relu", "dequantize_output"), [
    (48, (0.05, 128, "u8"), (0.04, 0, "u8"), False, True),    # channels-last, whole vectors
    (19, (0.05, 3, "i8"), (0.03, -5, "i8"), True, True),      # a masked tail of 3 channels
    (19, (0.07, 0, "u8"), (0.02, 10, "i8"), True, False),     # u8 -> i8, the u8 model output: plain
    (33, (0.03, -10, "i8"), (0.05, 100, "u8"), False, False),  # i8 -> u8, plain, saturating both ways
])
def test_scale_shift_gives_the_unfused_kernels_bytes(tmp_path: Path, c: int, src: tuple[float, int, str],
                                                     dst: tuple[float, int, str], relu: bool, dequantize_output: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Hand-written QDQ around a BN (the Relu kept): the fused node's bytes equal its NumPy
    reference (the product and the sum rounded apart, the quotient correctly rounded) and the
    unfused Dequantize / BatchNormInference / Quantize kernels' exactly, in both layouts and for
    every pairing of u8 and i8; ONNX Runtime's BN rounds otherwise: within one step."""
    path = _qdq_bn_model(tmp_path / "m.onnx", c, src, dst, relu, dequantize_output)
    x = (np.random.default_rng(44).standard_normal((1, c, 5, 7)) * 3).astype(np.float32)
    got, rows = _run(path, x)
    steps = int8_steps(rows, "QuantizedScaleShift")
    assert len(steps) == 1 and not int8_steps(rows, "BatchNormInference"), [(r.node_type, r.exec_type) for r in rows]
    assert ("nhwc" in steps[0].exec_type) == dequantize_output, steps[0].exec_type
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
    if isa in ("AVX2_VNNI", "AVX2"):
        assert steps[0].exec_type.endswith(":avx2"), steps[0].exec_type  # the AVX2 build ran
    elif isa == "SSE41":
        assert not steps[0].exec_type.endswith((":avx512", ":avx2")), steps[0].exec_type  # the baseline ran
    # the reference on the quantized input's bytes
    import onnx

    m = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    scale, shift = batch_norm_scale_shift(inits["gamma"], inits["beta"], inits["mean"], inits["var"], 1e-5)
    attrs = QuantizedScaleShiftAttrs(src_scale=src[0], src_zero_point=src[1], dst_scale=dst[0], dst_zero_point=dst[1],
                                     output_type=dst[2], relu=relu)
    ref = QuantizedScaleShift.evaluate(attrs, [_quantized(x, src[0], src[1], src[2]), scale, shift])[0]
    if dequantize_output:
        ref_out = ((ref.astype(np.float32) - np.float32(dst[1])) * np.float32(dst[0])).astype(np.float32)
        np.testing.assert_array_equal(got, ref_out)
    else:
        np.testing.assert_array_equal(got, ref)
    assert len(np.unique(ref)) > 20  # (not a saturated constant)
    monkeypatch.setenv(SWITCH, "0")
    off, off_rows = _run(path, x)
    assert int8_steps(off_rows, "BatchNormInference") and not int8_steps(off_rows, "QuantizedScaleShift")
    np.testing.assert_array_equal(got, off)
    import onnxruntime as ort

    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    step = dst[0] if dequantize_output else 1.0
    assert np.abs(got.astype(np.float64) - want.astype(np.float64)).max() <= step * (1 + 1e-4)


def test_ties_round_half_to_even(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """scale 1 and shift 0.25 with input and output steps of 0.5 put every value on a .5 tie of the
    output grid: each goes to the even integer, as the Quantize kernel rounds (and ONNX's
    QuantizeLinear)."""
    c = 16
    params = {"gamma": np.ones(c), "beta": np.full(c, 0.25), "mean": np.zeros(c), "var": np.ones(c)}
    path = _qdq_bn_model(tmp_path / "m.onnx", c, (0.5, 100, "u8"), (0.5, 100, "u8"), False, False, params, epsilon=0.0)
    x = np.linspace(-20, 20, c * 35, dtype=np.float32).reshape(1, c, 5, 7)
    got, rows = _run(path, x)
    assert int8_steps(rows, "QuantizedScaleShift")
    q = _quantized(x, 0.5, 100, "u8").astype(np.int64)
    # (q - 100) * 0.5 + 0.25, over 0.5: (q - 100) + 0.5, to even, + 100
    k = q - 100
    want = np.where(k % 2 == 0, k, k + 1) + 100
    np.testing.assert_array_equal(got, np.clip(want, 0, 255).astype(np.uint8))
    monkeypatch.setenv(SWITCH, "0")
    np.testing.assert_array_equal(_run(path, x)[0], got)


def test_reference_and_scale_shift() -> None:
    """batch_norm_scale_shift is the BN kernels' double arithmetic rounded to f32; the reference
    rounds the product and the sum apart, clamps NaN-keeping, quantizes half to even."""
    scale, shift = batch_norm_scale_shift(np.array([2.0], np.float32), np.array([1.0], np.float32),
                                          np.array([0.5], np.float32), np.array([3.0], np.float32), 1.0)
    np.testing.assert_array_equal(scale, np.float32(1.0))  # 2 / sqrt(4)
    np.testing.assert_array_equal(shift, np.float32(0.5))  # 1 - 0.5 * 1
    attrs = QuantizedScaleShiftAttrs(src_scale=0.5, src_zero_point=10, dst_scale=0.25, dst_zero_point=-3,
                                     output_type="i8", relu=True)
    x = np.array([0, 10, 11, 255], np.uint8).reshape(1, 4, 1, 1)
    s = np.array([1.0, 2.0, -1.0, 1.0], np.float32)
    t = np.array([0.0, 0.125, 0.0, 100.0], np.float32)
    y = QuantizedScaleShift.evaluate(attrs, [x, s, t])[0].reshape(-1)
    # -5 -> relu 0 -> -3; 0 * 2 + 0.125 = 0.125 / 0.25 = 0.5 -> 0 (even) -> -3;
    # 0.5 * -1 -> relu 0 -> -3; 122.5 + 100 -> saturated 127
    np.testing.assert_array_equal(y, np.array([-3, -3, -3, 127], np.int8))


@pytest.mark.parametrize(("isa", "tests"), [
    ("AVX2_VNNI", "not baseline_build"),
    # (no convolution: oneDNN's u8s8 ones without VNNI saturate, test_cpu_int8_blocks.py)
    ("SSE41", "(unfused_kernels_bytes or ties) and not baseline_build"),
])
def test_baseline_build_of_the_scale_shift(isa: str, tests: str) -> None:
    """The AVX-512 build runs where oneDNN's ISA has AVX-512, the AVX2 build on an AVX2 host, the
    baseline one elsewhere: with ONEDNN_MAX_CPU_ISA=AVX2_VNNI and SSE41 the tests above run again
    on them (each checks which ran) and give the same bytes as the references."""
    # The -k expression keeps this test out of the child's run; should a rename ever let it in,
    # the child skips it (and the assertion below says so) instead of starting pytest again.
    if os.environ.get("OPFORGE_SCALE_SHIFT_CHILD"):
        pytest.skip("already the child run of test_baseline_build_of_the_scale_shift")
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA=isa, OPFORGE_SCALE_SHIFT_CHILD="1")
    env.pop(SWITCH, None)
    done = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "-k", tests], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " skipped" not in done.stdout, done.stdout[-500:]
