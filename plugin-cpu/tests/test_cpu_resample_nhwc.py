"""Interpolate between convolutions (a UNet decoder's upsampling) reads the convolution's
channels-last (nhwc) output where it is and writes nhwc for the next convolution: no reorder to
planes and back. Checked against the reference for the interpolating and nearest modes, scales
and sizes, up and down, more channels than a vector and fewer, with NaN/inf, and as a model
output; an input in another blocked layout (nChw16c) is reordered to plain inside the kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import const, param
from opforge.graph import Model, Node
from opforge.reference import evaluate_model


def conv(x: Any, cin: int, cout: int, seed: int, name: str, k: int = 3) -> Node:
    rng = np.random.default_rng(seed)
    w = const(rng.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5)
    p = k // 2
    return opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[p, p], pads_end=[p, p],
                      dilations=[1, 1], name=name)


def resize(x: Any, target: list[float] | list[int], sizes: bool, **attrs: Any) -> Node:
    second = const(target, np.int64) if sizes else const(target, np.float32)
    attrs = {"shape_calculation_mode": "sizes" if sizes else "scales", **attrs}
    return opforge.op("Interpolate", x, second, const([2, 3], np.int64), name="resize", version="opset11", **attrs)


def run(core: opforge.Core, model: Model, feeds: list[np.ndarray], threads: int = 1) -> list[Any]:
    want = evaluate_model(model, feeds)
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True, "INFERENCE_NUM_THREADS": threads,
                                                 "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    res = req.infer({i: f for i, f in enumerate(feeds)})
    for i, w in enumerate(want):
        got = np.asarray(res[i])
        assert got.shape == w.shape, (i, got.shape, w.shape)
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4, equal_nan=True, err_msg=f"output {i}")
    return [r for r in req.get_profiling_info() if r.status == "EXECUTED"]


def exec_type(rows: list[Any]) -> str:
    (row,) = [r for r in rows if r.node_type == "Interpolate"]
    return str(row.exec_type)


def feed(shape: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    return [np.random.default_rng(seed).standard_normal(shape).astype(np.float32)]


CASES = [
    ({"mode": "linear_onnx", "coordinate_transformation_mode": "half_pixel"}, False, [2.0, 2.0]),
    ({"mode": "linear_onnx", "coordinate_transformation_mode": "align_corners"}, True, [13, 9]),
    ({"mode": "linear_onnx", "coordinate_transformation_mode": "asymmetric"}, False, [0.5, 0.75]),
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel"}, False, [0.5, 0.5]),
    ({"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"}, False, [1.5, 2.0]),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, False, [2.0, 2.0]),
    ({"mode": "linear_onnx", "coordinate_transformation_mode": "half_pixel"}, False, [1.0, 2.0]),  # W only
    ({"mode": "linear_onnx", "coordinate_transformation_mode": "half_pixel"}, False, [2.0, 1.0]),  # H only
]


@pytest.mark.parametrize(("attrs", "sizes", "target"), CASES)
@pytest.mark.parametrize("channels", [32, 20])
def test_resize_between_convolutions_stays_channels_last(core: opforge.Core, attrs: dict[str, Any], sizes: bool,
                                                          target: list[float], channels: int) -> None:
    x = param("x", (2, 16, 7, 6))
    c = conv(x, 16, channels, 1, "a")
    y = conv(resize(c, target, sizes, **attrs), channels, 8, 2, "b")
    rows = run(core, Model([y]), feed((2, 16, 7, 6)))
    assert exec_type(rows) == "interpolate_nhwc"
    # only the reorder of the blocked model output, none around the resize
    assert [r.node_type for r in rows].count("Reorder") <= 1


@pytest.mark.parametrize("threads", [1, 2])
def test_one_image_split_over_threads_and_returned(core: opforge.Core, threads: int) -> None:
    x = param("x", (1, 16, 20, 10))
    r = resize(conv(x, 16, 24, 3, "a"), [2.0, 2.0], False, mode="linear_onnx",
               coordinate_transformation_mode="half_pixel")
    rows = run(core, Model([conv(r, 24, 8, 4, "b"), r]), feed((1, 16, 20, 10), seed=1), threads=threads)
    assert exec_type(rows) == "interpolate_nhwc"


def test_nan_and_inf_stay_at_the_outputs_that_read_them(core: opforge.Core) -> None:
    # The convolution's output (NaN and inf where its input had them) is returned too, and the
    # reference resizes that: how a convolution spreads a NaN is not what is tested here.
    x = param("x", (1, 16, 6, 6))
    eye = const(np.eye(16, dtype=np.float32).reshape(16, 16, 1, 1))
    c = opforge.op("Convolution", x, eye, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1],
                   name="id")
    attrs = {"mode": "linear_onnx", "coordinate_transformation_mode": "half_pixel"}
    r = resize(c, [2.0, 2.0], False, **attrs)
    f = feed((1, 16, 6, 6), seed=2)
    f[0][0, 3, 2, 2] = np.nan
    f[0][0, 5, 0, 0] = np.inf
    compiled = core.compile_model(Model([r, c]), "CPU", {"ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    res = req.infer({0: f[0]})
    got_r, got_c = np.asarray(res[0]), np.asarray(res[1])
    assert np.isnan(got_c).any() and np.isinf(got_c).any()
    # The reference multiplies by dense weight matrices (0 x NaN spreads a NaN over its whole
    # row); like ONNX Runtime, the device reads only the taps of each output: the NaN and inf
    # stay at the outputs that read them, exactly as the plane kernel (plain input) has them.
    p = param("p", (1, 16, 6, 6))
    planes = core.compile_model(Model([resize(p, [2.0, 2.0], False, **attrs)]), "CPU",
                                {"INFERENCE_PRECISION_HINT": "f32"})
    want = np.asarray(planes([got_c]).to_tuple()[0])
    assert 0 < np.isnan(want).sum() < want.size / 4
    np.testing.assert_allclose(got_r, want, rtol=1e-6, atol=1e-6, equal_nan=True)
    assert exec_type([r for r in req.get_profiling_info() if r.status == "EXECUTED"]) == "interpolate_nhwc"


def test_another_blocked_layout_is_reordered_inside_the_kernel(core: opforge.Core) -> None:
    # a 3-channel source: oneDNN writes nChw16c, which the channels-last kernel does not read
    x = param("x", (1, 3, 12, 12))
    c = conv(x, 3, 32, 6, "a")
    y = conv(resize(c, [2.0, 2.0], False, mode="linear_onnx", coordinate_transformation_mode="half_pixel"),
             32, 8, 7, "b")
    rows = run(core, Model([y]), feed((1, 3, 12, 12), seed=3))
    assert exec_type(rows) in ("interpolate_nhwc", "reorder+interpolate_planes")
