"""Per-request IO of the CPU program: model inputs are read in the caller's arrays, outputs written
straight into new arrays; and the NaN-keeping loops of standalone Relu/Clamp/Exp/HSigmoid."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import check, const, param, rand
from opforge.graph import Model
from opforge.reference import evaluate_model


def chain() -> Model:
    # Neg and Relu may run in place: over the caller's input they must not
    x = param("x", [3, 64, 65])
    y = opforge.op("Relu", opforge.op("Negative", x, name="neg"), name="relu")
    return Model([y], [x], name="chain")


def test_outputs_are_new_arrays_that_stay_valid(core: Any) -> None:
    req = core.compile_model(chain(), "CPU").create_infer_request()
    x1, x2 = rand((3, 64, 65), seed=1), rand((3, 64, 65), seed=2)
    keep1, keep2 = x1.copy(), x2.copy()
    x2.setflags(write=False)  # read in place: a read-only array is fine
    r1 = req.infer([x1])[0]
    r2 = req.infer([x2])[0]
    # the first result is still the first inference's, in memory of its own
    np.testing.assert_array_equal(r1, np.maximum(-keep1, 0))
    np.testing.assert_array_equal(r2, np.maximum(-keep2, 0))
    assert not np.shares_memory(r1, r2)
    assert not np.shares_memory(r1, x1) and not np.shares_memory(r2, x2)
    # the inputs were read where they are, never written
    np.testing.assert_array_equal(x1, keep1)
    np.testing.assert_array_equal(x2, keep2)


def test_a_changed_input_array_is_read_again(core: Any) -> None:
    req = core.compile_model(chain(), "CPU").create_infer_request()
    x = rand((3, 64, 65), seed=3)
    req.set_tensor("x", x)
    first = req.infer()[0].copy()
    x *= -1  # set_tensor keeps a reference: the next run sees the change
    second = req.infer()[0]
    np.testing.assert_array_equal(first, np.maximum(x, 0))
    np.testing.assert_array_equal(second, np.maximum(-x, 0))
    # another array of the same shape, then the first again (the program re-points its views)
    other = rand((3, 64, 65), seed=4)
    np.testing.assert_array_equal(req.infer([other])[0], np.maximum(-other, 0))
    np.testing.assert_array_equal(req.infer([x])[0], np.maximum(-x, 0))


def test_strided_and_fortran_inputs_through_the_fast_lane(core: Any) -> None:
    # exact dtype and shape take InputBinder's fast lane, which hands the arrays over as they are:
    # the device makes the C-contiguous copy its program reads
    compiled = core.compile_model(chain(), "CPU")
    req = compiled.create_infer_request()
    big = rand((3, 64, 130), seed=3)
    for x in (big[:, :, ::2], np.asfortranarray(big[:, :, :65]), big[:, :, 1:66]):
        assert x.shape == (3, 64, 65)
        want = np.maximum(-x, 0)
        np.testing.assert_array_equal(req.infer([x])[0], want)
        np.testing.assert_array_equal(req.infer({"x": x})[0], want)
        np.testing.assert_array_equal(compiled(x)[0], want)


def test_outputs_read_later_repeated_passed_through_and_constant(core: Any) -> None:
    x = param("x", [2, 300])
    e = opforge.op("Exp", x, name="exp")             # an output that a later step reads
    n = opforge.op("Negative", e, name="neg")         # may run in place over nothing it must keep
    s = opforge.op("Add", n, x, name="add")
    c = const(rand((4,), seed=9), name="c")
    model = Model([e, s, e, x, c], [x], name="outs")
    req = core.compile_model(model, "CPU").create_infer_request()
    for seed in (5, 6):
        feeds = [rand((2, 300), seed=seed)]
        keep = feeds[0].copy()
        got = req.infer(feeds).to_tuple()
        want = evaluate_model(model, [keep])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
        # every output is an array of its own: not the input, not another output
        for i, g in enumerate(got):
            assert not np.shares_memory(g, feeds[0]), i
            for h in got[i + 1:]:
                assert not np.shares_memory(g, h)
        np.testing.assert_array_equal(feeds[0], keep)


def test_a_residual_sum_writes_into_the_returned_array(core: Any) -> None:
    # conv(x) + x fused as oneDNN's sum post-op writes over its destination: the model output
    # gets the residual copied in first, then the convolution adds onto it
    x = param("x", [1, 8, 10, 10])
    w = const(rand((8, 8, 3, 3), seed=1) * 0.2)
    conv = opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1],
                      name="conv")
    model = Model([opforge.op("Add", conv, x, name="residual")], [x], name="residual")
    req = core.compile_model(model, "CPU").create_infer_request()
    outs = []
    for seed in (7, 8, 7):
        feed = rand((1, 8, 10, 10), seed=seed)
        outs.append(req.infer([feed])[0])
        np.testing.assert_allclose(outs[-1], evaluate_model(model, [feed])[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(outs[0], outs[2])


# --- NaN-keeping standalone activations -------------------------------------------------------
SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 3.0, -3.0, 7.5, -7.5],
                   np.float32)


@pytest.mark.parametrize(("op", "attrs"), [("Relu", {}), ("Clamp", {"min": -1.5, "max": 2.0}), ("HSigmoid", {}),
                                           ("Exp", {})])
def test_nan_keeping_activation_matches_reference(core: Any, op: str, attrs: dict[str, Any]) -> None:
    x = param("x", [5, 1000])
    model = Model([opforge.op(op, x, name="act", **attrs)], [x], name=op)
    feed = np.concatenate([SPECIAL, rand((5 * 1000 - SPECIAL.size,), seed=1, low=-20, high=20)]).reshape(5, 1000)
    # HSigmoid as x / 6 + 0.5 (oneDNN's form) differs from (x + 3) / 6 by an ulp of 0.5
    got = check(core, model, [feed], rtol=3e-7, atol=6e-8)[0]
    nan = np.isnan(feed)
    assert np.isnan(got[nan]).all() and not np.isnan(got[~nan]).any()
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    req.infer([feed])
    assert [r.exec_type for r in req.get_profiling_info() if r.node_name == "act"] == ["loop:nan_safe"]


def test_exp_within_two_ulp_over_the_float_range(core: Any) -> None:
    x = param("x", [200_000])
    model = Model([opforge.op("Exp", x, name="exp")], [x], name="exp")
    feed = np.linspace(-110.0, 89.5, 200_000, dtype=np.float32)
    got = core.compile_model(model, "CPU")([feed])[0]
    with np.errstate(over="ignore"):
        want = np.exp(feed.astype(np.float64)).astype(np.float32)  # correctly rounded
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    np.testing.assert_array_max_ulp(got[normal], want[normal], maxulp=2)
    # denormal results: within one step of the smallest denormal; below them 0, above FLT_MAX inf
    np.testing.assert_allclose(got[~normal], want[~normal], rtol=0, atol=2 * np.finfo(np.float32).smallest_subnormal)
    assert np.isinf(got[feed > 88.73]).all() and np.isfinite(got[feed < 88.72]).all()
    assert (got[feed < -104] == 0).all()


def test_large_outputs_reuse_only_blocks_no_array_holds(core: Any) -> None:
    # outputs of 1 MiB and more live in blocks the request takes back when their arrays die
    x = param("x", [512, 1024])
    model = Model([opforge.op("Negative", x, name="neg")], [x], name="big")
    compiled = core.compile_model(model, "CPU")
    req = compiled.create_infer_request()
    feeds = [rand((512, 1024), seed=s) for s in range(4)]
    r0 = req.infer([feeds[0]])[0]
    view = r0[::3]  # a view keeps the block of r0 as much as r0 does
    del r0
    r1 = req.infer([feeds[1]])[0]
    r2 = req.infer([feeds[2]])[0]
    r3 = req.infer([feeds[3]])[0]
    for r in (r1, r2, r3):
        assert not np.shares_memory(view, r)
    assert not np.shares_memory(r1, r2) and not np.shares_memory(r2, r3) and not np.shares_memory(r1, r3)
    np.testing.assert_array_equal(view, -feeds[0][::3])
    for r, f in zip((r1, r2, r3), feeds[1:]):
        np.testing.assert_array_equal(r, -f)
        assert r.flags.c_contiguous and r.flags.writeable
    # a dropped output's block serves a later inference; results are still right
    del r1, r2, r3, view
    for f in feeds:
        np.testing.assert_array_equal(req.infer([f])[0], -f)
    # the compiled model outlives no request: its arrays outlive both
    keep = compiled([feeds[0]])[0]
    del compiled, req
    np.testing.assert_array_equal(keep, -feeds[0])


@pytest.mark.parametrize("channels", [16, 10])
def test_relu_of_a_blocked_convolution_output_keeps_nan(core: Any, channels: int) -> None:
    # The convolution's output has a second reader, so Relu is not fused and reads oneDNN's
    # blocked layout: 16 channels fill the blocks (the flat loop runs over them), 10 may leave a
    # padded block (oneDNN's relu, then the NaN pass)
    x = param("x", [1, 4, 9, 9])
    w = const(rand((channels, 4, 3, 3), seed=1) * 0.2)
    conv = opforge.op("Convolution", x, w, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1],
                      name="conv")
    relu = opforge.op("Relu", conv, name="act")
    pool = opforge.op("MaxPool", conv, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[2, 2], dilations=[1, 1],
                      name="pool")
    model = Model([relu, pool.output(0)], [x], name="blocked")
    feed = rand((1, 4, 9, 9), seed=2)
    feed[0, 1, 4, 4] = np.nan  # NaN reaches every channel around (4, 4) through the convolution
    got = check(core, model, [feed], rtol=1e-4, atol=1e-4)[0]
    assert np.isnan(got[0, :, 4, 4]).all() and not np.isnan(got[0, :, 0, 0]).any()
    req = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True}).create_infer_request()
    req.infer([feed])
    (row,) = [r for r in req.get_profiling_info() if r.node_name == "act"]
    # full blocks: the loop; 10 channels: oneDNN picks nChw16c (padded: its relu + the NaN pass)
    # or a layout without padding (the loop) depending on the host and thread count
    assert row.exec_type == "loop:nan_safe" or channels == 10, row.exec_type
