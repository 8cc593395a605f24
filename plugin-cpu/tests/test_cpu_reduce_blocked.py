"""Reductions and the squeeze-excitation Multiply on blocked tensors (issue 15): a spatial
Reduce* reads a convolution's nChw16c output in place, other blocked reductions reorder it to
plain inside the kernel, and Multiply/Add with a per-channel broadcast run oneDNN's binary in the
blocked layout, so an SE block (conv -> ReduceMean -> 1x1 conv -> Sigmoid -> Multiply) needs no
Reorder step. Also the accuracy of a long reduction (sums accumulate in double)."""

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


def run_profiled(core: opforge.Core, model: Model, feeds: list[np.ndarray]) -> tuple[list[np.ndarray], list[Any]]:
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    res = req.infer({i: f for i, f in enumerate(feeds)})
    return [np.asarray(res[i]) for i in range(len(model.outputs))], list(req.get_profiling_info())


def rows_of(rows: list[Any], node_type: str) -> list[Any]:
    return [r for r in rows if r.node_type == node_type and r.status == "EXECUTED"]


def executed(rows: list[Any]) -> list[str]:
    return [r.node_type for r in rows if r.status == "EXECUTED"]


def reduce_node(kind: str, x: Any, axes: list[int], keep: bool, name: str) -> Node:
    return opforge.op(kind, x, const(axes, np.int64), keep_dims=keep, name=name)


@pytest.mark.parametrize("channels", [16, 20, 40])
@pytest.mark.parametrize("kind", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceL1", "ReduceProd"])
@pytest.mark.parametrize("keep", [True, False])
def test_spatial_reduction_reads_the_blocked_convolution_output(core: opforge.Core, kind: str, channels: int,
                                                                keep: bool) -> None:
    # channels not a multiple of the block: the padded lanes must not reach the output
    x = param("x", (2, 8, 9, 7))
    c = conv(x, 8, channels, 1, "conv")
    c2 = conv(c, channels, 8, 2, "conv2")  # a second reader that wants the blocked layout too
    r = reduce_node(kind, c, [2, 3], keep, "reduce")
    feeds = [np.random.default_rng(3).uniform(0.5, 1.0, (2, 8, 9, 7)).astype(np.float32)]
    model = Model([r, c2])
    want = evaluate_model(model, feeds)
    got, rows = run_profiled(core, model, feeds)
    rtol = 1e-4 if kind != "ReduceProd" else 1e-3
    np.testing.assert_allclose(got[0], want[0], rtol=rtol, atol=1e-5)
    (red,) = rows_of(rows, kind)
    assert red.exec_type.startswith("reduce:blocked"), red.exec_type
    # only the reorder of the blocked model output conv2 makes
    assert executed(rows).count("Reorder") <= 1, executed(rows)


def test_spatial_max_of_a_blocked_tensor_propagates_nan(core: opforge.Core) -> None:
    x = param("x", (1, 4, 6, 6))
    c = conv(x, 4, 32, 4, "conv", k=1)
    model = Model([reduce_node("ReduceMax", c, [2, 3], True, "rmax"), reduce_node("ReduceMin", c, [2, 3], True, "rmin"),
                   conv(c, 32, 4, 5, "next", k=1)])
    feed = np.random.default_rng(5).standard_normal((1, 4, 6, 6)).astype(np.float32)
    feed[0, 2, 3, 1] = np.nan  # a 1x1 convolution spreads it to every channel at that position only
    got, _ = run_profiled(core, model, [feed])
    want = evaluate_model(model, [feed])
    for g, w in zip(got[:2], want[:2]):
        assert np.isnan(g).all() and np.isnan(w).all()
    feed2 = feed.copy()
    feed2[0, 2, 3, 1] = 0.5
    got2, _ = run_profiled(core, model, [feed2])
    want2 = evaluate_model(model, [feed2])
    np.testing.assert_allclose(got2[0], want2[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got2[1], want2[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axes", [[1], [1, 2], [0, 2, 3], [3]])
def test_other_reductions_of_a_blocked_tensor_reorder_inside_the_kernel(core: opforge.Core, axes: list[int]) -> None:
    x = param("x", (2, 8, 5, 6))
    c = conv(x, 8, 24, 6, "conv")
    model = Model([reduce_node("ReduceSum", c, axes, True, "rsum"), reduce_node("ReduceMax", c, axes, False, "rmax"),
                   conv(c, 24, 8, 7, "next")])
    feeds = [np.random.default_rng(8).standard_normal((2, 8, 5, 6)).astype(np.float32)]
    want = evaluate_model(model, feeds)
    got, rows = run_profiled(core, model, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    assert {r.exec_type for r in rows_of(rows, "ReduceSum") + rows_of(rows, "ReduceMax")} == {"reduce:reorder"}


def se_block(x: Any, channels: int, squeeze: int, seed: int, scale_first: bool) -> Node:
    rng = np.random.default_rng(seed)
    pooled = reduce_node("ReduceMean", x, [2, 3], True, f"se{seed}/pool")
    w1 = const(rng.standard_normal((squeeze, channels, 1, 1)) * 0.3)
    w2 = const(rng.standard_normal((channels, squeeze, 1, 1)) * 0.3)
    z = opforge.op("Convolution", pooled, w1, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0],
                   dilations=[1, 1], name=f"se{seed}/fc1")
    z = opforge.op("Relu", z, name=f"se{seed}/relu")
    z = opforge.op("Convolution", z, w2, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0],
                   dilations=[1, 1], name=f"se{seed}/fc2")
    s = opforge.op("Sigmoid", z, name=f"se{seed}/gate")
    return opforge.op("Multiply", *((s, x) if scale_first else (x, s)), name=f"se{seed}/scale")


@pytest.mark.parametrize("scale_first", [False, True])
def test_squeeze_excitation_block_runs_without_reorders(core: opforge.Core, scale_first: bool) -> None:
    x = param("x", (1, 8, 14, 14))
    c1 = conv(x, 8, 40, 10, "conv1")
    se = se_block(c1, 40, 10, 11, scale_first)
    bias = const(np.random.default_rng(12).standard_normal((40, 1, 1)))  # a rank-3 per-channel Add
    out = conv(opforge.op("Add", se, bias, name="bias"), 40, 16, 13, "conv2")
    model = Model([out])
    feeds = [np.random.default_rng(14).standard_normal((1, 8, 14, 14)).astype(np.float32)]
    (want,) = evaluate_model(model, feeds)
    (got,), rows = run_profiled(core, model, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    ran = executed(rows)
    # only the one reorder a blocked model output needs, none around the SE Multiply or the Add
    assert ran.count("Reorder") <= 1, ran
    (mul,) = rows_of(rows, "Multiply")
    assert not mul.exec_type.startswith("reorder+"), mul.exec_type
    (pool,) = rows_of(rows, "ReduceMean")
    assert pool.exec_type.startswith("reduce:blocked"), pool.exec_type


def test_binary_with_a_blocked_input_that_oneDNN_cannot_take_reorders_it(core: opforge.Core) -> None:
    # neither input has the output's shape ([1,16,6,6] * [2,1,1,1] -> [2,16,6,6]), which oneDNN's
    # binary (only src1 broadcasts) cannot take: the plain kernel runs on the reordered input
    x = param("x", (1, 8, 6, 6))
    c = conv(x, 8, 16, 20, "conv")
    k = const(np.array([2.0, -3.0], np.float32).reshape(2, 1, 1, 1))
    mul = opforge.op("Multiply", c, k, name="mul")
    add = opforge.op("Add", k, c, name="add")
    model = Model([mul, add, conv(c, 16, 8, 21, "next")])
    feeds = [np.random.default_rng(22).standard_normal((1, 8, 6, 6)).astype(np.float32)]
    want = evaluate_model(model, feeds)
    got, rows = run_profiled(core, model, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert all(r.exec_type.startswith("reorder+") for r in rows_of(rows, "Multiply") + rows_of(rows, "Add"))


def test_two_blocked_inputs_add_in_their_layout(core: opforge.Core) -> None:
    x = param("x", (1, 8, 10, 10))
    a = conv(x, 8, 24, 30, "a")
    b = conv(x, 8, 24, 31, "b")
    s = opforge.op("Add", a, b, name="sum")
    m = opforge.op("Multiply", s, a, name="prod")
    model = Model([conv(m, 24, 8, 32, "out")])
    feeds = [np.random.default_rng(33).standard_normal((1, 8, 10, 10)).astype(np.float32)]
    (want,) = evaluate_model(model, feeds)
    (got,), rows = run_profiled(core, model, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert executed(rows).count("Reorder") <= 1, executed(rows)


@pytest.mark.parametrize("kind", ["ReduceSum", "ReduceMean", "ReduceL2"])
def test_a_long_row_is_as_accurate_as_double_accumulation(core: opforge.Core, kind: str) -> None:
    # 1e6 elements with a large common offset: a float32 running sum loses ~3 digits here, a
    # double accumulator (what the kernel keeps) rounds once at the end
    n = 1_000_000
    rng = np.random.default_rng(40)
    data = (1000.0 + rng.standard_normal((2, n))).astype(np.float32)
    x = param("x", (2, n))
    model = Model([reduce_node(kind, x, [1], False, "r"), reduce_node(kind, x, [0], False, "c")])
    got = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})([data]).to_tuple()
    d = data.astype(np.float64)
    exact_rows = {"ReduceSum": d.sum(1), "ReduceMean": d.mean(1), "ReduceL2": np.sqrt((d * d).sum(1))}[kind]
    exact_cols = {"ReduceSum": d.sum(0), "ReduceMean": d.mean(0), "ReduceL2": np.sqrt((d * d).sum(0))}[kind]
    # within one float32 rounding of the exact value
    np.testing.assert_allclose(got[0], exact_rows.astype(np.float32), rtol=1.2e-7, atol=0)
    np.testing.assert_allclose(got[1], exact_cols.astype(np.float32), rtol=1.2e-7, atol=0)


@pytest.mark.parametrize("axes", [[0], [1], [2], [0, 2], [1, 2], [0, 1, 2]])
@pytest.mark.parametrize("kind", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1"])
def test_plain_reductions_over_every_axis_pattern(core: opforge.Core, kind: str, axes: list[int]) -> None:
    # rows (reduced axes innermost), columns (kept innermost, > 64 wide: a partial chunk), strided
    shape = (3, 5, 70)
    rng = np.random.default_rng(50)
    feeds = [rng.uniform(0.8, 1.2, shape).astype(np.float32), rng.integers(-9, 9, shape).astype(np.int32)]
    feeds[0][1, 2, 7] = np.nan
    outs = []
    for i, dt in enumerate(["f32", "i32"]):
        outs.append(reduce_node(kind, param(f"x{i}", shape, dt), axes, True, f"r{i}"))
    model = Model(outs)
    want = evaluate_model(model, feeds)
    got = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(feeds).to_tuple()
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, equal_nan=True)
    np.testing.assert_array_equal(got[1], want[1])


def test_empty_reduction_gives_the_start_value(core: opforge.Core) -> None:
    x = param("x", (3, 0))
    model = Model([reduce_node("ReduceSum", x, [1], False, "s"), reduce_node("ReduceProd", x, [1], False, "p")])
    got = core.compile_model(model, "CPU")([np.zeros((3, 0), np.float32)]).to_tuple()
    np.testing.assert_array_equal(got[0], np.zeros(3, np.float32))
    np.testing.assert_array_equal(got[1], np.ones(3, np.float32))


@pytest.mark.parametrize("kind", ["ReduceMean", "ReduceSum"])
def test_a_large_blocked_spatial_sum_stays_within_a_few_ulp(core: opforge.Core, kind: str) -> None:
    # 250x250 positions: groups of 8 pairwise in f32, groups summed in double, so the error does
    # not grow with the count (a f32 running sum would be off by ~1e-4 relative here)
    x = param("x", (1, 1, 250, 250))
    w = const(np.linspace(0.5, 1.5, 16).reshape(16, 1, 1, 1))
    c = opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1], name="c")
    model = Model([reduce_node(kind, c, [2, 3], True, "r"), conv(c, 16, 4, 60, "next", k=1)])
    feed = (1000.0 + np.random.default_rng(61).standard_normal((1, 1, 250, 250))).astype(np.float32)
    got, rows = run_profiled(core, model, [feed])
    assert rows_of(rows, kind)[0].exec_type.startswith("reduce:blocked")
    conv_out = (feed.astype(np.float64) * np.linspace(0.5, 1.5, 16).astype(np.float32).reshape(1, 16, 1, 1))
    conv_out = conv_out.astype(np.float32).astype(np.float64)
    exact = conv_out.sum((2, 3), keepdims=True) / (conv_out[0, 0].size if kind == "ReduceMean" else 1)
    np.testing.assert_allclose(got[0], exact.astype(np.float32), rtol=4e-7, atol=0)


def test_a_blocked_spatial_mean_of_huge_values_does_not_overflow(core: opforge.Core) -> None:
    x = param("x", (1, 1, 6, 6))
    w = const(np.ones((16, 1, 1, 1)))
    c = opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1], name="c")
    model = Model([reduce_node("ReduceMean", c, [2, 3], True, "r"), conv(c, 16, 4, 62, "next", k=1)])
    feed = np.full((1, 1, 6, 6), 3.0e38, np.float32)
    got, rows = run_profiled(core, model, [feed])
    assert rows_of(rows, "ReduceMean")[0].exec_type.startswith("reduce:blocked")
    np.testing.assert_allclose(got[0], np.full((1, 16, 1, 1), 3.0e38, np.float32), rtol=1e-6)


@pytest.mark.parametrize("channels", [20, 40])
@pytest.mark.parametrize("hw", [(16, 16), (13, 11)])
@pytest.mark.parametrize("kind", ["ReduceMean", "ReduceSum"])
def test_a_spatial_sum_of_an_nhwc_tensor_is_the_same_at_1_and_2_threads(core: opforge.Core, kind: str,
                                                                       hw: tuple[int, int], channels: int) -> None:
    # > 128 positions of a convolution's nhwc output: fixed segments of positions shared out by
    # the threads, summed in segment order (reduce:blocked:segments); the batch of 2, a tail
    # segment and channels that are not a multiple of 16 each take their own path
    x = param("x", (2, 8, *hw))
    c = conv(x, 8, channels, 7, "conv")
    model = Model([reduce_node(kind, c, [2, 3], True, "r"), conv(c, channels, 4, 8, "next", k=1)])
    feed = np.random.default_rng(9).uniform(-1.0, 2.0, (2, 8, *hw)).astype(np.float32)
    feed[1, :, 3, 4] = np.inf  # one position of the second image: inf or NaN (inf - inf) where it reaches
    want = evaluate_model(model, [feed])
    got = {}
    for threads in (1, 2):
        compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32",
                                                     "INFERENCE_NUM_THREADS": threads})
        req = compiled.create_infer_request()
        res = req.infer({0: feed})
        got[threads] = np.asarray(res[0])
        assert rows_of(list(req.get_profiling_info()), kind)[0].exec_type == "reduce:blocked:segments"
    np.testing.assert_array_equal(got[1], got[2])
    np.testing.assert_allclose(got[2], want[0], rtol=1e-5, atol=1e-5)
    assert not np.isfinite(got[2][1]).all() and np.isfinite(got[2][0]).all()


def test_a_segmented_nhwc_mean_of_huge_values_does_not_overflow(core: opforge.Core) -> None:
    x = param("x", (1, 1, 20, 20))
    w = const(np.ones((24, 1, 1, 1)))
    c = opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1], name="c")
    model = Model([reduce_node("ReduceMean", c, [2, 3], True, "r"), conv(c, 24, 4, 63, "next", k=1)])
    feed = np.full((1, 1, 20, 20), 3.0e38, np.float32)
    for threads in (1, 2):
        compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32",
                                                     "INFERENCE_NUM_THREADS": threads})
        req = compiled.create_infer_request()
        got = np.asarray(req.infer({0: feed})[0])
        assert rows_of(list(req.get_profiling_info()), "ReduceMean")[0].exec_type == "reduce:blocked:segments"
        np.testing.assert_allclose(got, np.full((1, 24, 1, 1), 3.0e38, np.float32), rtol=1e-6)
