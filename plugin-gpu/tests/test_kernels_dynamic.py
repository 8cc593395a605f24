"""NonZero and Unique (``kernels/dynamic.cl``: output sizes decided at run time) against the
NumPy reference (``opforge.reference.evaluate_model``)."""

from __future__ import annotations

import numpy as np
import opforge
import pytest
from gpu_util import check, const, param, rand
from opforge.graph import Model


def _supported(core: opforge.Core, m: Model) -> None:
    assert set(core.query_model(m, "GPU")) == {n.name for n in m.get_ordered_ops()}


@pytest.mark.parametrize(("shape", "et", "out"), [
    ([5], "f32", "i64"), ([3, 4], "f32", "i32"), ([2, 3, 4], "i32", "i64"), ([600], "f32", "i64"),
    ([], "f32", "i64"), ([2, 2], "boolean", "i32"),
])
def test_nonzero(core: opforge.Core, shape: list, et: str, out: str) -> None:
    x = param(shape, et)
    m = Model([opforge.op("NonZero", x, output_type=out)], [x])
    _supported(core, m)
    dt = {"f32": np.float32, "i32": np.int32, "boolean": np.bool_}[et]
    data = rand(shape, dt, low=-1, high=1) if et != "f32" else np.round(rand(shape))
    compiled = core.compile_model(m, "GPU")
    check(core, m, [data])
    # another count on the same compiled model, then all zeros
    for d in (np.ones(shape, dt), np.zeros(shape, dt)):
        got = compiled([d])[0]
        want = np.stack(np.nonzero(d.reshape(-1) if d.ndim == 0 else d))
        np.testing.assert_array_equal(got, want)


def test_nonzero_then_consumers(core: opforge.Core) -> None:
    # Compress: NonZero feeds a Squeeze and a Gather planned for the observed count
    x = param([6, 3])
    cond = param([6], "boolean", "c")
    nz = opforge.op("NonZero", cond, output_type="i64")
    sq = opforge.op("Squeeze", nz, const([0], np.int64))
    g = opforge.op("Gather", x, sq, const(0, np.int64))
    m = Model([opforge.op("Relu", g)], [x, cond])
    _supported(core, m)
    compiled = core.compile_model(m, "GPU")
    for seed in range(3):
        c = rand([6], np.bool_, seed=seed)
        xv = rand([6, 3], seed=seed)
        np.testing.assert_allclose(compiled([xv, c])[0], np.maximum(xv[c], 0))
    check(core, m, [rand([6, 3]), rand([6], np.bool_, seed=5)])


@pytest.mark.parametrize(("shape", "axis", "srt", "et"), [
    ([10], None, True, "f32"), ([10], None, False, "f32"), ([3, 4], None, True, "i32"),
    ([4, 3], 0, True, "f32"), ([4, 3], 0, False, "f32"), ([2, 5, 2], 1, True, "i32"), ([3, 4], -1, False, "i64"),
    ([1], None, True, "f32"), ([300], None, False, "i32"),
])
def test_unique(core: opforge.Core, shape: list, axis: int | None, srt: bool, et: str) -> None:
    x = param(shape, et)
    ins = [x] if axis is None else [x, const(axis, np.int64)]
    u = opforge.op("Unique", *ins, sorted=srt, index_element_type="i32" if et == "i32" else "i64")
    m = Model([u.output(i) for i in range(4)], [x])
    _supported(core, m)
    dt = {"f32": np.float32, "i32": np.int32, "i64": np.int64}[et]
    data = rand(shape, dt, low=-2, high=2)
    if et == "f32":
        data = np.round(data)
    if axis is not None:  # repeat a slice
        ax = axis % len(shape)
        idx = [slice(None)] * len(shape)
        src = list(idx)
        idx[ax], src[ax] = -1, 0  # type: ignore[call-overload]
        data[tuple(idx)] = data[tuple(src)]
    check(core, m, [data])


def _boxes(nb: int, n: int, seed: int, center: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 4, (nb, n, 2))
    wh = rng.uniform(0.5, 3, (nb, n, 2))
    if center:
        return np.concatenate([xy, wh], -1).astype(np.float32)
    return np.concatenate([xy, xy + wh], -1)[..., [0, 1, 2, 3]].astype(np.float32)


@pytest.mark.parametrize(("nb", "nc", "n", "max_out", "iou", "score", "sigma", "enc", "desc", "out"), [
    (1, 1, 6, 3, 0.5, 0.0, 0.0, "corner", True, "i64"),
    (2, 3, 8, 4, 0.3, 0.2, 0.0, "corner", False, "i32"),
    (2, 2, 10, 10, 0.5, 0.1, 0.5, "center", True, "i64"),
    (1, 2, 5, 0, 0.5, 0.0, 0.0, "corner", True, "i64"),
    (3, 1, 7, 2, 0.0, 0.9, 0.0, "center", False, "i64"),
])
def test_non_max_suppression(core: opforge.Core, nb: int, nc: int, n: int, max_out: int, iou: float,
                             score: float, sigma: float, enc: str, desc: bool, out: str) -> None:
    b, s = param([nb, n, 4], name="boxes"), param([nb, nc, n], name="scores")
    nms = opforge.op("NonMaxSuppression", b, s, const(max_out, np.int64), const(iou), const(score), const(sigma),
                     box_encoding=enc, sort_result_descending=desc, output_type=out)
    m = Model([nms.output(i) for i in range(3)], [b, s])
    _supported(core, m)
    scores = np.round(rand([nb, nc, n], seed=3, low=0, high=1) * 8) / 8  # ties: the first box wins
    check(core, m, [_boxes(nb, n, 1, enc == "center"), scores], rtol=1e-5, atol=1e-6)


def test_non_max_suppression_runtime_scalars(core: opforge.Core) -> None:
    b, s = param([1, 6, 4], name="boxes"), param([1, 2, 6], name="scores")
    k, t = param([], "i32", "k"), param([], "f32", "t")
    nms = opforge.op("NonMaxSuppression", b, s, k, t)
    m = Model([nms.output(0), nms.output(1), nms.output(2)], [b, s, k, t])
    _supported(core, m)
    for kv, tv in ((2, 0.5), (6, 0.1)):
        check(core, m, [_boxes(1, 6, 2, False), rand([1, 2, 6], seed=4, low=0, high=1),
                        np.array(kv, np.int32), np.array(tv, np.float32)])
