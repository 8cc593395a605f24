"""A UNet decoder's upsampling in bf16 programs: ConvTranspose computes in bf16 (oneDNN's AMX
deconvolution, f32 sums) and bilinear/nearest Resize resamples a bf16 nhwc tensor from its bf16
values (core/resample.cpp ChannelsLastResampler::run_bf16), each writing bf16 where only bf16
convolutions read the result (emit.py ``_bf16_upsampling``). Checked against ONNX Runtime (f32)
within the bf16 tolerance, with the exec types that say it ran in bf16, and NaN kept."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("opforge_onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from opforge_cpu._loader import load_core  # noqa: E402

needs_bf16 = pytest.mark.skipif(not bool(load_core().native_bf16()),
                                reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")
SHAPE = (1, 8, 20, 24)


def decoder(up: str, mode: str = "linear", ctm: str = "half_pixel", tail: bool = True) -> bytes:
    """conv 3x3 (32 ch) + relu -> upsampling x2 -> [conv 3x3 + relu]; ``up`` is "resize" or
    "deconv" (ConvTranspose 2x2 stride 2 with a bias). Without ``tail`` the upsampling's
    output is the model's output (bf16 in, f32 out)."""
    rng = np.random.default_rng(5)
    inits: list[Any] = []

    def init(name: str, a: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(a.astype(np.float32), name))
        return name

    nodes = [helper.make_node("Conv", ["x", init("w1", rng.standard_normal((32, 8, 3, 3)) / 8.5),
                                       init("b1", 0.1 * rng.standard_normal(32))], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"])]
    if up == "resize":
        inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
        attrs: dict[str, Any] = {"mode": mode, "coordinate_transformation_mode": ctm}
        if mode == "nearest":
            attrs["nearest_mode"] = "floor"
        nodes.append(helper.make_node("Resize", ["r1", "", "scales"], ["u"], **attrs))
        ch = 32
    else:
        nodes.append(helper.make_node("ConvTranspose", ["r1", init("wt", rng.standard_normal((32, 16, 2, 2)) / 11.0),
                                                        init("bt", 0.1 * rng.standard_normal(16))], ["u"],
                                      strides=[2, 2], kernel_shape=[2, 2]))
        ch = 16
    out = "u"
    if tail:
        nodes += [helper.make_node("Conv", ["u", init("w2", rng.standard_normal((16, ch, 3, 3)) / (3 * ch ** 0.5)),
                                            init("b2", 0.1 * rng.standard_normal(16))], ["c2"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["c2"], ["y"])]
        out = "y"
    graph = helper.make_graph(nodes, f"decoder_{up}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def run(data: bytes, x: np.ndarray, precision: str, threads: int = 1) -> tuple[np.ndarray, dict[str, str]]:
    """The output and {node type: exec type} of the executed steps (Reorder: its step names)."""
    import opforge

    core = opforge.Core()
    compiled = core.compile_model(core.read_model(data), "CPU", {"INFERENCE_PRECISION_HINT": precision,
                                                                 "ENABLE_PROFILING": True,
                                                                 "INFERENCE_NUM_THREADS": threads})
    request = compiled.create_infer_request()
    got = np.asarray(request.infer({"x": x})[0])
    rows = [r for r in request.get_profiling_info() if r.status == "EXECUTED"]
    types = {r.node_type: r.exec_type for r in rows}
    if any(r.node_type == "Reorder" for r in rows):
        types["Reorder"] = " ".join(sorted(r.node_name for r in rows if r.node_type == "Reorder"))
    return got, types


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max())


@needs_bf16
@pytest.mark.parametrize(("mode", "ctm"), [("linear", "half_pixel"), ("linear", "align_corners"),
                                           ("linear", "asymmetric"), ("nearest", "asymmetric"),
                                           ("cubic", "half_pixel")])
@pytest.mark.parametrize("tail", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_bf16_resize_between_convolutions(mode: str, ctm: str, tail: bool, threads: int) -> None:
    data = decoder("resize", mode, ctm, tail)
    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got, exec_types = run(data, x, "bf16", threads)
    assert got.shape == ref.shape
    # bf16 storage of each tensor between the steps (~4e-3 relative each), no more; and it
    # really rounded (the f32 program agrees with ONNX Runtime to ~1e-6)
    assert 1e-4 < rel_err(got, ref) < 2e-2
    assert rel_err(run(data, x, "f32", threads)[0], ref) < 1e-5
    # resampled from the bf16 nhwc tensor the convolution wrote; into bf16 when a convolution
    # reads it, into f32 when it is the model's output
    assert exec_types["Interpolate"] == ("interpolate_nhwc_bf16" if tail else "interpolate_nhwc_bf16_f32")
    # (no conversion around it: only the model output's own reorder from nhwc, if any)
    assert exec_types.get("Reorder", "output_reorder") == "output_reorder", exec_types


@needs_bf16
@pytest.mark.parametrize("tail", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_bf16_conv_transpose_between_convolutions(tail: bool, threads: int) -> None:
    data = decoder("deconv", tail=tail)
    x = np.random.default_rng(2).standard_normal(SHAPE).astype(np.float32)
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got, exec_types = run(data, x, "bf16", threads)
    assert got.shape == ref.shape
    assert 1e-4 < rel_err(got, ref) < 2e-2
    f32, f32_types = run(data, x, "f32", threads)
    assert rel_err(f32, ref) < 1e-5
    deconv = exec_types["ConvolutionBackpropData"]
    assert not deconv.startswith("ref"), deconv
    if "amx" in exec_types["Convolution"]:
        # on AMX hosts oneDNN's AMX deconvolution, where f32 runs its avx512_core one
        assert "amx" in deconv and "amx" not in f32_types["ConvolutionBackpropData"], (deconv, f32_types)


@needs_bf16
@pytest.mark.parametrize("up", ["resize", "deconv"])
def test_bf16_upsampling_keeps_nan_and_inf(up: str) -> None:
    # NaN and inf in the input reach the same outputs as in f32 (bf16 keeps both; the first
    # convolution's fused ReLU turns NaN into 0 in both programs, an inf goes on)
    data = decoder(up, tail=False)
    x = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)
    x[0, 2, 4, 5] = np.nan
    x[0, 3, 15, 20] = np.inf
    want, _ = run(data, x, "f32")
    got, _ = run(data, x, "bf16")
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want))
    assert not np.isfinite(got).all()
    fin = np.isfinite(want)
    assert np.abs(got[fin] - want[fin]).max() / np.abs(want[fin]).max() < 2e-2
