"""Concat of convolution outputs in oneDNN's layouts (issue 15, Inception/Fire modules): the
Concat kernel is layout-flexible, so the convolutions' nhwc or nChw16c outputs are concatenated
where they are and the result stays in that layout for the next convolution or pooling, instead
of a reorder to plain per input, a copy, and a reorder back. Every case is checked against the
reference: channel counts that are not multiples of the layout's block, a mix of plain and
blocked inputs, a concat read by two kernels, a concat that is also a model output, other axes."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import const, param
from opforge.graph import Model, Node
from opforge.reference import evaluate_model


def conv(x: Any, cin: int, cout: int, seed: int, name: str, k: int = 3, relu: bool = True) -> Node:
    rng = np.random.default_rng(seed)
    w = const(rng.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5)
    p = k // 2
    y = opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[p, p], pads_end=[p, p],
                   dilations=[1, 1], name=name)
    return opforge.op("Relu", y, name=name + "_relu") if relu else y


def concat(inputs: list[Any], axis: int = 1, name: str = "cat") -> Node:
    return opforge.op("Concat", *inputs, axis=axis, name=name)


def run(core: opforge.Core, model: Model, feeds: list[np.ndarray]) -> list[Any]:
    """Checks every output against the reference; returns the executed profiling rows."""
    want = evaluate_model(model, feeds)
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    res = req.infer({i: f for i, f in enumerate(feeds)})
    for i, w in enumerate(want):
        got = np.asarray(res[i])
        assert got.shape == w.shape, (i, got.shape, w.shape)
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4, err_msg=f"output {i}")
    return [r for r in req.get_profiling_info() if r.status == "EXECUTED"]


def feed(shape: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    return [np.random.default_rng(seed).standard_normal(shape).astype(np.float32)]


def types(rows: list[Any]) -> list[str]:
    return [r.node_type for r in rows]


def concat_row(rows: list[Any]) -> Any:
    (row,) = [r for r in rows if r.node_type == "Concat"]
    return row


def test_fire_module_concat_runs_in_the_convolutions_layout(core: opforge.Core) -> None:
    # SqueezeNet's fire module: squeeze 1x1, expand 1x1 and 3x3, concat, next squeeze 1x1
    x = param("x", (1, 32, 15, 15))
    s = conv(x, 32, 16, 1, "squeeze", k=1)
    cat = concat([conv(s, 16, 64, 2, "e1", k=1), conv(s, 16, 64, 3, "e3")])
    y = conv(cat, 128, 16, 4, "next", k=1)
    rows = run(core, Model([y]), feed((1, 32, 15, 15)))
    assert concat_row(rows).exec_type != "memcpy", concat_row(rows).exec_type
    # at most the reorder of the blocked model output
    assert types(rows).count("Reorder") <= 1, types(rows)


@pytest.mark.parametrize("channels", [(3, 5), (7, 9, 11), (20, 12), (16, 16), (1, 33)])
def test_odd_channel_counts(core: opforge.Core, channels: tuple[int, ...]) -> None:
    # offsets that are not multiples of a channel block (nChw16c from a 3-channel source): oneDNN
    # cannot place such inputs in the blocked output, the kernel then writes it plain
    for cin in (3, 24):
        x = param("x", (2, cin, 9, 11))
        parts = [conv(x, cin, c, 10 + i, f"c{i}") for i, c in enumerate(channels)]
        cat = concat(parts)
        y = conv(cat, sum(channels), 8, 5, "next")
        pool = opforge.op("MaxPool", cat, strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], kernel=[2, 2],
                          rounding_type="floor", auto_pad="explicit", dilations=[1, 1], name="pool")
        run(core, Model([y, pool.output(0)]), feed((2, cin, 9, 11), seed=cin))


def test_plain_and_blocked_inputs_mixed(core: opforge.Core) -> None:
    x = param("x", (1, 16, 8, 8))
    a = conv(x, 16, 32, 1, "a")
    # a model input (plain) between two convolution outputs, and a plain Sigmoid output
    cat = concat([a, x, conv(x, 16, 16, 2, "b"), opforge.op("Sigmoid", x, name="sig")])
    run(core, Model([conv(cat, 80, 8, 3, "next")]), feed((1, 16, 8, 8)))


def test_concat_read_by_two_kernels_and_returned(core: opforge.Core) -> None:
    x = param("x", (1, 16, 10, 10))
    cat = concat([conv(x, 16, 32, 1, "a"), conv(x, 16, 24, 2, "b", k=1)])
    y1 = conv(cat, 56, 8, 3, "c1")
    y2 = opforge.op("AvgPool", cat, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], kernel=[3, 3],
                    exclude_pad=True, rounding_type="floor", auto_pad="explicit", name="avg")
    rows = run(core, Model([y1, y2, cat]), feed((1, 16, 10, 10), seed=4))
    assert concat_row(rows).exec_type != "memcpy"


def test_concat_as_the_only_output(core: opforge.Core) -> None:
    x = param("x", (1, 8, 6, 7))
    cat = concat([conv(x, 8, 16, 1, "a"), conv(x, 8, 16, 2, "b")])
    run(core, Model([cat]), feed((1, 8, 6, 7)))


@pytest.mark.parametrize("axis", [0, 2, 3, -1, -3])
def test_other_axes(core: opforge.Core, axis: int) -> None:
    x = param("x", (1, 16, 6, 6))
    cat = concat([conv(x, 16, 32, 1, "a"), conv(x, 16, 32, 2, "b")], axis=axis)
    c_in = 64 if axis in (1, -3) else 32
    run(core, Model([conv(cat, c_in, 8, 3, "next"), cat]), feed((1, 16, 6, 6)))


def test_an_empty_input_adds_nothing(core: opforge.Core) -> None:
    x = param("x", (1, 16, 6, 6))
    e = param("e", (1, 0, 6, 6))
    cat = concat([conv(x, 16, 32, 1, "a"), e, conv(x, 16, 16, 2, "b")])
    feeds = [*feed((1, 16, 6, 6)), np.zeros((1, 0, 6, 6), np.float32)]
    run(core, Model([conv(cat, 48, 8, 3, "next")], [x, e]), feeds)


def test_nan_and_inf_pass_through(core: opforge.Core) -> None:
    x = param("x", (1, 16, 5, 5))
    a = conv(x, 16, 32, 1, "a", relu=False)
    cat = concat([a, conv(x, 16, 16, 2, "b", relu=False)])
    pool = opforge.op("MaxPool", cat, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[2, 2],
                      rounding_type="floor", auto_pad="explicit", dilations=[1, 1], name="pool")
    f = feed((1, 16, 5, 5))
    f[0][0, 3, 2, 2] = np.nan
    f[0][0, 5, 0, 0] = np.inf
    run(core, Model([pool.output(0), cat]), f)


def batch_norm(x: Any, channels: int, seed: int, name: str) -> Node:
    rng = np.random.default_rng(seed)
    gamma, beta, mean = (const(rng.uniform(-1.5, 1.5, channels)) for _ in range(3))
    var = const(rng.uniform(0.2, 2.0, channels))
    return opforge.op("BatchNormInference", x, gamma, beta, mean, var, epsilon=1e-5, name=name)


@pytest.mark.parametrize("growth", [32, 12])
def test_dense_block_stays_in_the_convolutions_layout(core: opforge.Core, growth: int) -> None:
    # DenseNet: concat -> BN -> ReLU -> 1x1 conv -> BN -> ReLU -> 3x3 conv -> concat with the input
    x = param("x", (1, 16, 9, 9))
    cur, c = conv(x, 16, 32, 1, "stem"), 32
    for i in range(3):
        h = opforge.op("Relu", batch_norm(cur, c, 10 + i, f"bn{i}a"), name=f"r{i}a")
        h = conv(h, c, 48, 20 + i, f"c{i}a", k=1, relu=False)
        h = opforge.op("Relu", batch_norm(h, 48, 30 + i, f"bn{i}b"), name=f"r{i}b")
        h = conv(h, 48, growth, 40 + i, f"c{i}b", relu=False)
        cur, c = concat([cur, h], name=f"cat{i}"), c + growth
    rows = run(core, Model([conv(cur, c, 8, 50, "head", k=1)]), feed((1, 16, 9, 9)))
    bns = [r for r in rows if r.node_type == "BatchNormInference"]
    assert all(r.exec_type != "ref" for r in bns), [r.exec_type for r in bns]
    if growth == 32:  # channels-last throughout: only the model output's reorder
        assert types(rows).count("Reorder") <= 1, types(rows)


@pytest.mark.parametrize("channels", [20, 3])
def test_batch_norm_of_a_blocked_tensor(core: opforge.Core, channels: int) -> None:
    # 3 input channels: nChw16c with padded channels; NaN and inf pass through
    x = param("x", (2, 3, 7, 5))
    c = conv(x, 3, channels, 1, "a", relu=False)
    # (after a pooling: a batch norm right after a convolution is folded into it)
    pool = opforge.op("MaxPool", c, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[2, 2],
                      rounding_type="floor", auto_pad="explicit", dilations=[1, 1], name="pool")
    bn = batch_norm(pool.output(0), channels, 2, "bn")
    y = conv(bn, channels, 8, 3, "b", k=1, relu=False)
    f = feed((2, 3, 7, 5), seed=5)
    f[0][1, 2, 3, 3] = np.inf
    rows = run(core, Model([y, bn]), f)
    (row,) = [r for r in rows if r.node_type == "BatchNormInference"]
    assert row.exec_type != "ref", row.exec_type


@pytest.mark.parametrize("blocked", [True, False])
def test_batch_norm_with_its_relu_fused_keeps_nan(core: opforge.Core, blocked: bool) -> None:
    # BN -> ReLU in one pass, nhwc (after a pooling of a convolution) and plain (on the input);
    # a NaN stays NaN through the fused ReLU, as through the Relu kernel
    x = param("x", (1, 16, 6, 6))
    src: Any = x
    if blocked:
        src = opforge.op("MaxPool", conv(x, 16, 32, 1, "a", relu=False), strides=[1, 1], pads_begin=[0, 0],
                         pads_end=[0, 0], kernel=[1, 1], rounding_type="floor", auto_pad="explicit",
                         dilations=[1, 1], name="pool").output(0)
    c = 32 if blocked else 16
    r = opforge.op("Relu", batch_norm(src, c, 3, "bn"), name="relu")
    y = conv(r, c, 8, 4, "b", k=1, relu=False)
    f = feed((1, 16, 6, 6), seed=6)
    f[0][0, 2, 1, 1] = np.nan
    rows = run(core, Model([y, r]), f)
    (row,) = [r for r in rows if r.node_type == "BatchNormInference"]
    assert "Relu" not in types(rows)
    if blocked:
        assert row.exec_type == "scale_shift_relu:nhwc", row.exec_type
