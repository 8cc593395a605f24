"""The first convolution of a network (plain image, 3 channels) writes channels-last on hosts
where oneDNN runs ordinary convolutions channels-last (AVX-512 brgconv), so a ResNet stem's
residual stream is nhwc from the start and its sum convolutions run brgconv on it, with no reorder
between the stem and the head. Values against the reference, on either kind of host."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import const, param
from opforge.graph import Model, Node
from opforge.reference import evaluate_model
from opforge_cpu._loader import load_core


def conv(x: Any, cin: int, cout: int, seed: int, name: str, k: int = 3, stride: int = 1) -> Node:
    rng = np.random.default_rng(seed)
    w = const(rng.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5)
    p = k // 2
    return opforge.op("Convolution", x, w, strides=[stride, stride], pads_begin=[p, p], pads_end=[p, p],
                      dilations=[1, 1], name=name)


def relu(x: Any, name: str) -> Node:
    return opforge.op("Relu", x, name=name)


@pytest.mark.parametrize(("k", "stride", "size"), [(7, 2, 40), (3, 1, 17), (3, 2, 23)])
def test_stem_and_residual_block_share_one_layout(core: opforge.Core, k: int, stride: int, size: int) -> None:
    x = param("x", (1, 3, size, size))
    stem = relu(conv(x, 3, 64, 1, "stem", k=k, stride=stride), "stem_relu")
    pool = opforge.op("MaxPool", stem, strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1], kernel=[3, 3],
                      rounding_type="floor", auto_pad="explicit", dilations=[1, 1], name="pool").output(0)
    h = relu(conv(pool, 64, 64, 2, "c1"), "r1")
    h = conv(h, 64, 64, 3, "c2")
    y = relu(opforge.op("Add", h, pool, name="add"), "r2")
    model = Model([conv(y, 64, 8, 4, "head", k=1)])
    feeds = [np.random.default_rng(5).standard_normal((1, 3, size, size)).astype(np.float32)]
    (want,) = evaluate_model(model, feeds)
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer({0: feeds[0]})[0])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    rows = [r for r in req.get_profiling_info() if r.status == "EXECUTED"]
    if load_core().cpu_isa().startswith("avx512"):
        convs = [r for r in rows if r.node_type == "Convolution"]
        # the block's convolutions (the residual one included) run brgconv on nhwc
        assert all(r.exec_type.startswith("brg") for r in convs[1:]), [(r.node_name, r.exec_type) for r in convs]
        assert [r.node_type for r in rows].count("Reorder") <= 1  # the model output's


def deconv(x: Any, cin: int, cout: int, seed: int, name: str, groups: int = 1) -> Node:
    rng = np.random.default_rng(seed)
    attrs: dict[str, Any] = {"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1],
                             "name": name}
    if groups == 1:
        return opforge.op("ConvolutionBackpropData", x, const(rng.standard_normal((cin, cout, 2, 2)) * 0.3), **attrs)
    w = rng.standard_normal((groups, cin // groups, cout // groups, 2, 2)) * 0.3
    return opforge.op("GroupConvolutionBackpropData", x, const(w), **attrs)


@pytest.mark.parametrize("groups", [1, 4])
@pytest.mark.parametrize("bias_first", [False, True])
def test_conv_transpose_bias_is_folded(core: opforge.Core, groups: int, bias_first: bool) -> None:
    # ONNX ConvTranspose's B: a per-channel Add after the transposed convolution
    x = param("x", (1, 16, 6, 5))
    up = deconv(relu(conv(x, 16, 32, 1, "a"), "r"), 32, 24, 2, "up", groups)
    b = const(np.random.default_rng(3).standard_normal((1, 24, 1, 1)))
    add = opforge.op("Add", *((b, up) if bias_first else (up, b)), name="bias")
    y = conv(relu(add, "r2"), 24, 8, 4, "b")
    model = Model([y, add])
    feeds = [np.random.default_rng(5).standard_normal((1, 16, 6, 5)).astype(np.float32)]
    want = evaluate_model(model, feeds)
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    res = req.infer({0: feeds[0]})
    for i, w in enumerate(want):
        np.testing.assert_allclose(np.asarray(res[i]), w, rtol=1e-4, atol=1e-4)
    rows = [r for r in req.get_profiling_info() if r.status == "EXECUTED"]
    assert "Add" not in [r.node_type for r in rows]


def test_a_non_constant_or_non_channel_add_stays(core: opforge.Core) -> None:
    x = param("x", (1, 8, 4, 4))
    up = deconv(x, 8, 8, 6, "up")
    full = opforge.op("Add", up, const(np.random.default_rng(7).standard_normal((1, 8, 8, 8))), name="full")
    model = Model([full])
    feeds = [np.random.default_rng(8).standard_normal((1, 8, 4, 4)).astype(np.float32)]
    (want,) = evaluate_model(model, feeds)
    got = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(feeds).to_tuple()[0]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)


def max_pool(x: Any, kernel: list[int], strides: list[int], pads: tuple[list[int], list[int]], rounding: str,
             dilations: list[int], name: str = "pool") -> Any:
    return opforge.op("MaxPool", x, strides=strides, pads_begin=pads[0], pads_end=pads[1], kernel=kernel,
                      rounding_type=rounding, auto_pad="explicit", dilations=dilations, name=name).output(0)


POOLS = [
    ([3, 3], [2, 2], ([0, 0], [0, 0]), "ceil", [1, 1]),  # squeezenet
    ([3, 3], [2, 2], ([1, 1], [1, 1]), "floor", [1, 1]),  # resnet stem
    ([2, 2], [2, 2], ([0, 0], [0, 0]), "floor", [1, 1]),  # unet
    ([3, 3], [1, 1], ([1, 1], [1, 1]), "floor", [1, 1]),  # inception branch
    ([2, 3], [1, 2], ([1, 0], [0, 2]), "ceil", [2, 1]),  # odd: pads, dilation, ceil
]


@pytest.mark.parametrize(("kernel", "strides", "pads", "rounding", "dilations"), POOLS)
@pytest.mark.parametrize("channels", [32, 20])
def test_max_pool_of_nhwc_propagates_nan_in_one_pass(core: opforge.Core, kernel: list[int], strides: list[int],
                                                    pads: tuple[list[int], list[int]], rounding: str,
                                                    dilations: list[int], channels: int) -> None:
    # The convolution's output (with NaN, inf and -inf where its input had them) is returned
    # too, and the reference pools that: how a convolution spreads a NaN is not tested here.
    x = param("x", (2, 16, 11, 9))
    eye = np.zeros((channels, 16, 1, 1), np.float32)
    eye[:16, :, 0, 0] = np.eye(16, dtype=np.float32)  # the input's 16 channels, then zeros
    c = opforge.op("Convolution", x, const(eye), strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0],
                   dilations=[1, 1], name="id")
    pool = max_pool(c, kernel, strides, pads, rounding, dilations)
    feeds = [np.random.default_rng(9).standard_normal((2, 16, 11, 9)).astype(np.float32)]
    feeds[0][0, 3, 4, 4] = np.nan
    feeds[0][1, 5, 0, 0] = np.inf
    feeds[0][1, 6, 2, 3] = -np.inf
    model = Model([conv(pool, channels, 8, 11, "next", k=1), pool, c])
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    res = req.infer({0: feeds[0]})
    got_pool, got_c = np.asarray(res[1]), np.asarray(res[2])
    p = param("p", got_c.shape)
    (want,) = evaluate_model(Model([max_pool(p, kernel, strides, pads, rounding, dilations)]), [got_c])
    np.testing.assert_array_equal(got_pool, want)
    assert np.isnan(want).any()
    rows = [r for r in req.get_profiling_info() if r.status == "EXECUTED" and r.node_type == "MaxPool"]
    if load_core().cpu_isa().startswith("avx512"):
        # walked by output rows (stop 16); a 3-wide window at column stride 1 by columns (stop 17)
        cols = kernel[1] == 3 and strides[1] == 1 and dilations[1] == 1
        assert [r.exec_type for r in rows] == ["max_nhwc_cols:avx512" if cols else "max_nhwc_rows:avx512"]
    elif load_core().cpu_isa().startswith("avx2") and os.environ.get("OPFORGE_CPU_POOL_AVX2", "1") != "0":
        # (an AVX2 host, or ONEDNN_MAX_CPU_ISA=AVX2: the row walk's AVX2 build, stop 22)
        assert [r.exec_type for r in rows] == ["max_nhwc_rows:avx2"]
    else:  # (no AVX2, or its switch off: oneDNN's pooling and the NaN scan)
        assert not rows[0].exec_type.startswith("max_nhwc")
