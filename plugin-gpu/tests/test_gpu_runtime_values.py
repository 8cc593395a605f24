"""Plans that depend on values fed at run time (shapes, axes, sizes, counts, scalars, weights): one
plan per value, data uses left on the device, run-time index errors, duplicate indices, and
outputs whose size a kernel decides (NonZero feeding later ops)."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from gpu_util import check, const, param, rand, supported
from opforge.graph import Model
from opforge.reference import evaluate_model


def _one(node: opforge.Node, params: list[opforge.Node]) -> Model:
    return Model([node], params)


# --- values known only at run time: one plan per value --------------------------------------
def test_reshape_slice_reduce_with_runtime_values(core: opforge.Core) -> None:
    x = param([2, 3, 4])
    shape = param([2], "i64", "shape")
    start = param([1], "i64", "start")
    axes = param([1], "i64", "axes")
    r = opforge.op("Reshape", x, shape, special_zero=False)
    s = opforge.op("Slice", x, start, const([4], np.int64), const([1], np.int64), const([2], np.int64))
    red = opforge.op("ReduceSum", x, axes, keep_dims=True)
    m = Model([r, s, red], [x, shape, start, axes])
    data = rand([2, 3, 4])
    compiled = core.compile_model(m, "GPU")
    for sv, st, ax in (([6, 4], [1], [0]), ([4, 6], [2], [2]), ([6, 4], [0], [1])):
        feeds = [data, np.array(sv, np.int64), np.array(st, np.int64), np.array(ax, np.int64)]
        check(core, m, feeds)
        got = compiled(feeds)
        assert got[0].shape == tuple(sv)
    assert compiled._executable.value_inputs == [1, 2, 3]  # type: ignore[attr-defined]


def test_runtime_values_fold_only_shape_computations(core: opforge.Core) -> None:
    # depth is used as a shape (OneHot) and as data (Add): the data use stays on the device
    idx = param([4], "i64", "idx")
    depth = param([], "i64", "depth")
    shifted = opforge.op("Add", idx, depth)
    oh = opforge.op("OneHot", idx, depth, const(1.0), const(0.0), axis=-1)
    m = Model([shifted, oh], [idx, depth])
    check(core, m, [np.array([0, 2, 1, 3], np.int64), np.array(4, np.int64)])
    check(core, m, [np.array([0, 2, 1, 3], np.int64), np.array(5, np.int64)])


def test_topk_integer_runtime_k(core: opforge.Core) -> None:
    x = param([3, 5], "i32")
    k = param([], "i64", "k")
    t = opforge.op("TopK", x, k, axis=1, mode="max", sort="value", index_element_type="i64")
    m = Model([t.output(0), t.output(1)], [x, k])
    for kv in (1, 4):
        check(core, m, [rand([3, 5], np.int32, low=-9, high=9), np.array(kv, np.int64)])


@pytest.mark.parametrize(("et", "vals"), [("i64", (2, 17, 3)), ("f32", (0.5, 3.0, 0.25)), ("i32", (10, -4, -3))])
def test_range_fed_at_run_time(core: opforge.Core, et: str, vals: tuple) -> None:
    dt = {"i64": np.int64, "i32": np.int32, "f32": np.float32}[et]
    ps = [param([], et, n) for n in ("a", "b", "c")]
    y = opforge.op("Range", *ps, output_type=et)
    check(core, _one(y, ps), [np.array(v, dt) for v in vals])


def test_pad_value_fed_at_run_time(core: opforge.Core) -> None:
    x = param([2, 3])
    v = param([], name="v")
    y = opforge.op("Pad", x, const([1, 0], np.int64), const([0, 2], np.int64), v, pad_mode="constant")
    check(core, _one(y, [x, v]), [rand([2, 3]), np.array(7.5, np.float32)])


# --- convolutions and pooling -----------------------------------------------------------------
def _conv_attrs(n: int, stride: int = 1, pad: int = 1, dil: int = 1) -> dict[str, Any]:
    return {"strides": [stride] * n, "pads_begin": [pad] * n, "pads_end": [pad] * n, "dilations": [dil] * n}


def test_conv_filters_fed_at_run_time(core: opforge.Core) -> None:
    x = param([2, 4, 7, 6])
    w = param([6, 4, 3, 3], name="w")
    wg = param([2, 6, 2, 3, 3], name="wg")
    y = opforge.op("Convolution", x, w, **_conv_attrs(2, stride=2))
    g = opforge.op("GroupConvolution", x, opforge.op("Multiply", wg, const(0.5)), **_conv_attrs(2))
    check(core, Model([y, g], [x, w, wg]), [rand([2, 4, 7, 6]), rand([6, 4, 3, 3], seed=4), rand([2, 6, 2, 3, 3])])


@pytest.mark.parametrize(("rows", "cols", "k", "batch", "et"), [
    (3, 3, 0, None, "f32"), (3, 5, 2, None, "i32"), (4, 2, -1, [2], "f32"), (2, 3, 5, [2, 1], "i64"),
])
def test_eye_from_runtime_values(core: opforge.Core, rows: int, cols: int, k: int, batch: list | None,
                                 et: str) -> None:
    ps = [param([], "i64", n) for n in ("r", "c", "k")]
    feeds = [np.array(v, np.int64) for v in (rows, cols, k)]
    if batch is not None:
        ps.append(param([len(batch)], "i32", "b"))
        feeds.append(np.array(batch, np.int32))
    m = Model([opforge.op("Eye", *ps, output_type=et)], ps)
    supported(core, m)
    check(core, m, feeds)


def test_reverse_axes_fed_at_run_time(core: opforge.Core) -> None:
    x = param([3, 4], "i32")
    a = param([1], "i64", "axes")
    m = Model([opforge.op("Reverse", x, a, mode="index")], [x, a])
    supported(core, m)
    data = rand([3, 4], np.int32, low=-9, high=9)
    for axes in ([0], [1], [-1]):
        check(core, m, [data, np.array(axes, np.int64)])


def test_roll_shift_and_axes_fed_at_run_time(core: opforge.Core) -> None:
    x = param([3, 4, 2], "f32")
    s, a = param([2], "i32", "shift"), param([2], "i64", "axes")
    m = Model([opforge.op("Roll", x, s, a)], [x, s, a])
    supported(core, m)
    data = rand([3, 4, 2])
    for shift, axes in (([1, 1], [0, 1]), ([-3, 5], [1, 2]), ([2, 2], [0, 0])):
        check(core, m, [data, np.array(shift, np.int32), np.array(axes, np.int64)])
    b = param([4, 3], "boolean")
    mb = Model([opforge.op("Roll", b, const(-1, np.int64), const([0, 1], np.int64))], [b])
    check(core, mb, [rand([4, 3], np.bool_)])


def test_scatter_update_duplicates_run_time_axis_and_errors(core: opforge.Core) -> None:
    from opforge.errors import KernelError

    x, i, u = param([3, 3], "i32", "x"), param([3], "i64", "i"), param([3, 3], "i32", "u")
    a = param([], "i64", "axis")
    y = opforge.op("ScatterUpdate", x, i, u, a, name="su")
    m = Model([y], [x, i, u, a])
    supported(core, m)
    data, upd = rand([3, 3], np.int32, low=-9, high=9), rand([3, 3], np.int32, seed=1, low=-9, high=9)
    dup = np.array([1, 2, 1], np.int64)  # the last duplicate wins
    check(core, m, [data, dup, upd, np.array(0, np.int64)])
    check(core, m, [data, dup, upd, np.array(1, np.int64)])
    compiled = core.compile_model(m, "GPU")
    for bad, msg in ((np.array([0, 3, 1], np.int64), "index 3 "), (np.array([0, -1, 1], np.int64), "index -1 ")):
        with pytest.raises(KernelError, match="node 'su'") as info:
            compiled([data, bad, upd, np.array(1, np.int64)])
        assert msg in str(info.value) and "axis 1 of size 3" in str(info.value) and "0..2" in str(info.value)
    np.testing.assert_array_equal(compiled([data, dup, upd, np.array(1, np.int64)])[0],
                                  evaluate_model(m, [data, dup, upd, np.array(1, np.int64)])[0])


def test_nonzero_then_consumers(core: opforge.Core) -> None:
    # Compress: NonZero feeds a Squeeze and a Gather planned for the observed count
    x = param([6, 3])
    cond = param([6], "boolean", "c")
    nz = opforge.op("NonZero", cond, output_type="i64")
    sq = opforge.op("Squeeze", nz, const([0], np.int64))
    g = opforge.op("Gather", x, sq, const(0, np.int64))
    m = Model([opforge.op("Relu", g)], [x, cond])
    supported(core, m)
    compiled = core.compile_model(m, "GPU")
    for seed in range(3):
        c = rand([6], np.bool_, seed=seed)
        xv = rand([6, 3], seed=seed)
        np.testing.assert_allclose(compiled([xv, c])[0], np.maximum(xv[c], 0))
    check(core, m, [rand([6, 3]), rand([6], np.bool_, seed=5)])


def _corner_boxes(nb: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 4, (nb, n, 2))
    return np.concatenate([xy, xy + rng.uniform(0.5, 3, (nb, n, 2))], -1).astype(np.float32)


def test_non_max_suppression_runtime_scalars(core: opforge.Core) -> None:
    b, s = param([1, 6, 4], name="boxes"), param([1, 2, 6], name="scores")
    k, t = param([], "i32", "k"), param([], "f32", "t")
    nms = opforge.op("NonMaxSuppression", b, s, k, t)
    m = Model([nms.output(0), nms.output(1), nms.output(2)], [b, s, k, t])
    supported(core, m)
    for kv, tv in ((2, 0.5), (6, 0.1)):
        check(core, m, [_corner_boxes(1, 6, 2), rand([1, 2, 6], seed=4, low=0, high=1),
                        np.array(kv, np.int32), np.array(tv, np.float32)])


def test_fourier_axes_and_sizes_fed_at_run_time(core: opforge.Core) -> None:
    x, ax, sz = param([3, 6, 2]), param([1], "i64", "axes"), param([1], "i64", "size")
    m = Model([opforge.op("DFT", x, ax, sz)], [x, ax, sz])
    supported(core, m)
    compiled = core.compile_model(m, "GPU")
    data = rand([3, 6, 2])
    for axes, size in (([1], [6]), ([0], [4]), ([-1], [9])):
        got = compiled([data, np.asarray(axes, np.int64), np.asarray(size, np.int64)])[0]
        want = np.fft.fft(data[..., 0] + 1j * data[..., 1], n=size[0], axis=axes[0])
        np.testing.assert_allclose(got, np.stack([want.real, want.imag], -1), rtol=1e-4, atol=1e-4)


# --- values only the data decides: core's staging ---------------------------------------------
def test_shape_computed_from_data_runs_in_stages(core: opforge.Core) -> None:
    """A Reshape to a shape read out of a tensor (ReduceMax of data): no plan can know it, so
    the model runs in stages (a prefix computing the shape, a suffix planned per its value); the
    GPU claims every node, and each value of the computed shape gets its own suffix plan."""
    from opforge.planning import StagedExecutable

    x, s = param([12], name="x"), param([2, 2100], name="s")  # too large to read as a value input
    target = opforge.op("Convert", opforge.op("ReduceMax", s, const([1], np.int64), keep_dims=False),
                        destination_type="i64")
    m = Model([opforge.op("Relu", opforge.op("Reshape", x, target, special_zero=False))], [x, s])
    supported(core, m)
    compiled = core.compile_model(m, "GPU")
    data = rand([12])
    for rows, cols in ((3, 4), (2, 6), (3, 4)):
        shape = np.zeros([2, 2100], np.float32)
        shape[0, 5], shape[1, 2000] = rows, cols
        np.testing.assert_array_equal(compiled([data, shape])[0], np.maximum(data, 0).reshape(rows, cols))
    (staged,) = compiled._executable.plans.values()  # type: ignore[attr-defined]
    assert isinstance(staged, StagedExecutable) and staged.in_suffix and staged.point.type_name == "Reshape"
    assert len(staged.suffix.plans) == 2  # type: ignore[attr-defined]


def test_unique_then_consumers_count_once_per_run(core: opforge.Core) -> None:
    """Unique's stage is the node alone: a count pass, then a fill pass planned per count; the
    nodes before it run once (the prefix), not once per pass."""
    x = param([10], "i32")
    u = opforge.op("Unique", opforge.op("Abs", x), sorted=True, index_element_type="i64",
                   count_element_type="i64")
    m = Model([opforge.op("Multiply", u.output(0), const(2, np.int32)), u.output(3)], [x])
    compiled = core.compile_model(m, "GPU", {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    for seed in range(3):
        xv = rand([10], np.int32, seed=seed, low=-4, high=4)
        got = req.infer([xv])
        want = evaluate_model(m, [xv])
        for i, w in enumerate(want):
            np.testing.assert_array_equal(got[i], w)
        rows = [r["node_type"] for r in req.get_profiling_info()]
        assert rows.count("Abs") == 1 and rows.count("Multiply") == 1 and "Unique" in rows
