"""Einsum, GRN, NormalizeL2, adaptive pooling, Eye and the other kernels of ``extra.cl``, each
against the NumPy reference (``opforge.reference.evaluate_model``)."""

from __future__ import annotations

import numpy as np
import opforge
import pytest
from gpu_util import check, const, param, rand
from opforge.graph import Model
from opforge.reference import evaluate_model


def _supported(core: opforge.Core, m: Model) -> None:
    assert set(core.query_model(m, "GPU")) == {n.name for n in m.get_ordered_ops()}


@pytest.mark.parametrize(("eq", "shapes"), [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (3, 4, 2)]),
    ("i,i", [(6,), (6,)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 2), (2, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->", [(3, 4)]),
])
def test_einsum(core: opforge.Core, eq: str, shapes: list) -> None:
    ps = [param(s, name=f"x{i}") for i, s in enumerate(shapes)]
    m = Model([opforge.op("Einsum", *ps, equation=eq)], ps)
    _supported(core, m)
    check(core, m, [rand(s, seed=i) for i, s in enumerate(shapes)])


def test_einsum_integer(core: opforge.Core) -> None:
    a, b = param([3, 4], "i32", "a"), param([4, 2], "i32", "b")
    m = Model([opforge.op("Einsum", a, b, equation="ij,jk->ik")], [a, b])
    check(core, m, [rand([3, 4], np.int32, low=-5, high=5), rand([4, 2], np.int32, seed=1, low=-5, high=5)])


@pytest.mark.parametrize(("shape", "bias"), [([2, 3], 1e-6), ([2, 4, 5], 0.5), ([1, 3, 4, 5], 1.0)])
def test_grn(core: opforge.Core, shape: list, bias: float) -> None:
    x = param(shape)
    m = Model([opforge.op("GRN", x, bias=bias)], [x])
    _supported(core, m)
    check(core, m, [rand(shape)])


@pytest.mark.parametrize(("shape", "axes", "mode", "eps"), [
    ([2, 3, 4], [1], "add", 1e-6), ([2, 3, 4], [1, 2], "max", 1e-3), ([2, 3, 4, 5], [-1], "add", 0.5),
    ([2, 3, 4], [0, 2], "max", 100.0), ([3, 4], [], "add", 1e-6),
])
def test_normalize_l2(core: opforge.Core, shape: list, axes: list, mode: str, eps: float) -> None:
    x = param(shape)
    y = opforge.op("NormalizeL2", x, const(axes, np.int64), eps=eps, eps_mode=mode)
    m = Model([y], [x])
    _supported(core, m)
    data = rand(shape)
    data.reshape(-1)[::3] = 0
    check(core, m, [data])


@pytest.mark.parametrize(("shape", "out"), [([2, 3, 7], [3]), ([1, 2, 5, 7], [3, 2]), ([2, 2, 9, 4], [4, 4]),
                                            ([1, 2, 4, 5, 6], [2, 3, 4]), ([1, 3, 4, 4], [8, 8])])
def test_adaptive_pools(core: opforge.Core, shape: list, out: list) -> None:
    x = param(shape)
    avg = opforge.op("AdaptiveAvgPool", x, const(out, np.int64))
    mx = opforge.op("AdaptiveMaxPool", x, const(out, np.int32), index_element_type="i32")
    m = Model([avg, mx.output(0), mx.output(1)], [x])
    _supported(core, m)
    check(core, m, [np.round(rand(shape) * 2) / 2])  # ties: the first maximum wins


def test_adaptive_max_pool_integer_i64(core: opforge.Core) -> None:
    x = param([2, 3, 6, 5], "i32")
    mx = opforge.op("AdaptiveMaxPool", x, const([3, 2], np.int64))
    check(core, Model([mx.output(0), mx.output(1)], [x]), [rand([2, 3, 6, 5], np.int32, low=-9, high=9)])


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
    _supported(core, m)
    check(core, m, feeds)


@pytest.mark.parametrize(("mode", "aligned", "ratio", "scale"), [
    ("avg", "asymmetric", 2, 1.0), ("max", "half_pixel_for_nn", 0, 0.5), ("avg", "half_pixel", 0, 0.25),
    ("max", "asymmetric", 3, 1.0),
])
def test_roi_align(core: opforge.Core, mode: str, aligned: str, ratio: int, scale: float) -> None:
    x = param([2, 3, 8, 9])
    rois = param([4, 4], name="rois")
    bidx = param([4], "i32", "b")
    y = opforge.op("ROIAlign", x, rois, bidx, pooled_h=3, pooled_w=2, sampling_ratio=ratio,
                   spatial_scale=scale, mode=mode, aligned_mode=aligned)
    m = Model([y], [x, rois, bidx])
    _supported(core, m)
    boxes = np.array([[0, 0, 5, 4], [1.5, 2, 8, 7.5], [-2, -1, 3, 10], [4, 4, 4.3, 4.2]], np.float32) / scale
    check(core, m, [rand([2, 3, 8, 9]), boxes, np.array([0, 1, 1, 0], np.int32)])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample(core: opforge.Core, mode: str, padding: str, align: bool) -> None:
    x = param([2, 2, 5, 6])
    g = param([2, 4, 3, 2], name="g")
    y = opforge.op("GridSample", x, g, mode=mode, padding_mode=padding, align_corners=align)
    m = Model([y], [x, g])
    _supported(core, m)
    grid = rand([2, 4, 3, 2], seed=1, low=-1.6, high=1.6)
    grid[0, 0, 0] = [0.25, -0.5]  # exact halves: nearest rounds them to even
    check(core, m, [rand([2, 2, 5, 6]), grid], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("batched", "out", "kern", "attrs", "et"), [
    (True, [4, 5], [2, 2], {}, "f32"),
    (False, [5, 5], [3, 2], {"strides": [2, 1], "dilations": [1, 2], "pads_begin": [1, 0], "pads_end": [1, 2]}, "f32"),
    (True, [6, 4], [2, 3], {"strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 2]}, "i32"),
])
def test_col2im(core: opforge.Core, batched: bool, out: list, kern: list, attrs: dict, et: str) -> None:
    from opforge.opset.col2im import Col2ImAttrs, _blocks

    a = Col2ImAttrs(**attrs)
    nb = _blocks(a, out, kern)
    shape = ([2] if batched else []) + [3 * kern[0] * kern[1], nb[0] * nb[1]]
    x = param(shape, et)
    y = opforge.op("Col2Im", x, const(out, np.int64), const(kern, np.int64), **attrs)
    m = Model([y], [x])
    _supported(core, m)
    check(core, m, [rand(shape, np.float32 if et == "f32" else np.int32, low=-9, high=9)])


@pytest.mark.parametrize(("op", "direction", "extra"), [
    ("RNNSequence", "forward", {"activations": ["tanh"]}),
    ("RNNSequence", "bidirectional", {"activations": ["relu"], "clip": 1.5}),
    ("GRUSequence", "forward", {"activations": ["sigmoid", "tanh"]}),
    ("GRUSequence", "reverse", {"activations": ["sigmoid", "tanh"], "linear_before_reset": True}),
    ("GRUSequence", "bidirectional", {"activations": ["sigmoid", "relu"], "clip": 0.7}),
    ("LSTMSequence", "forward", {}),
    ("LSTMSequence", "bidirectional", {"clip": 2.0}),
    ("LSTMSequence", "reverse", {"activations": ["sigmoid", "relu", "tanh"]}),
])
def test_recurrent_sequences(core: opforge.Core, op: str, direction: str, extra: dict) -> None:
    batch, seq, inp, hs = 3, 5, 4, 70  # hidden over one work-group of 64 work-items
    gates = {"RNNSequence": 1, "GRUSequence": 3, "LSTMSequence": 4}[op]
    states = 2 if op == "LSTMSequence" else 1
    nd = 2 if direction == "bidirectional" else 1
    nb = 4 if extra.get("linear_before_reset") else gates
    shapes = [[batch, seq, inp]] + [[batch, nd, hs]] * states
    ps = [param(s, name=f"s{i}") for i, s in enumerate(shapes)]
    lens = param([batch], "i32", "lens")
    ws = [param([nd, gates * hs, inp], name="w"), param([nd, gates * hs, hs], name="r"),
          param([nd, nb * hs], name="b")]
    node = opforge.op(op, *ps, lens, *ws, hidden_size=hs, direction=direction, **extra)
    m = Model([node.output(i) for i in range(1 + states)], [*ps, lens, *ws])
    _supported(core, m)
    feeds = [rand(s, seed=i) for i, s in enumerate(shapes)] + [np.array([5, 0, 3], np.int32)]
    feeds += [rand(p.output(0).shape, seed=7 + i, low=-0.3, high=0.3) for i, p in enumerate(ws)]
    check(core, m, feeds, rtol=1e-4, atol=1e-4)


# --- Identity, Reverse, Roll, ScatterUpdate ---------------------------------------------------
@pytest.mark.parametrize(("shape", "et", "dtype"), [([2, 3], "f32", np.float32), ([4], "i64", np.int64),
                                                     ([], "f32", np.float32), ([2, 0, 3], "f32", np.float32),
                                                     ([3, 2], "boolean", np.bool_)])
def test_identity(core: opforge.Core, shape: list, et: str, dtype: object) -> None:
    x = param(shape, et)
    m = Model([opforge.op("Identity", x, name="identity")], [x])
    _supported(core, m)
    check(core, m, [rand(shape, dtype)])


def test_identity_inside_a_graph(core: opforge.Core) -> None:
    # the alias of the input is read by the next node and is itself an output; the input stays intact
    x = param([2, 3, 4])
    i = opforge.op("Identity", opforge.op("Relu", x), name="identity")
    m = Model([i, opforge.op("Multiply", i, const(2.0)), opforge.op("Sigmoid", x)], [x])
    _supported(core, m)
    check(core, m, [rand([2, 3, 4])])
    check(core, m, [rand([2, 3, 4], seed=1)], config={"INFERENCE_PRECISION_HINT": "f16"}, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize(("shape", "mode", "axes"), [
    ([2, 3, 4], "index", [0, 2]), ([2, 3, 4], "index", [-1]), ([2, 3, 4], "index", []), ([5], "index", [0]),
    ([2, 3, 4], "mask", [False, True, True]), ([2, 3], "mask", [False, False]), ([2, 3, 4, 2], "index", [1, 2]),
])
def test_reverse(core: opforge.Core, shape: list, mode: str, axes: list) -> None:
    x = param(shape)
    a = const(axes, np.bool_ if mode == "mask" else np.int64) if axes or mode == "mask" else const([], np.int64)
    m = Model([opforge.op("Reverse", x, a, mode=mode)], [x])
    _supported(core, m)
    check(core, m, [rand(shape)])


def test_reverse_axes_fed_at_run_time(core: opforge.Core) -> None:
    x = param([3, 4], "i32")
    a = param([1], "i64", "axes")
    m = Model([opforge.op("Reverse", x, a, mode="index")], [x, a])
    _supported(core, m)
    data = rand([3, 4], np.int32, low=-9, high=9)
    for axes in ([0], [1], [-1]):
        check(core, m, [data, np.array(axes, np.int64)])


@pytest.mark.parametrize(("shape", "shift", "axes"), [
    ([2, 3, 4], 1, [0, 2]), ([2, 3, 4], [2, -1], [1, 2]), ([5], [-7], [0]), ([3, 4], [1, 2, 3], [0, 1, -2]),
    ([2, 3, 4], [0], [1]), ([4, 5], 12, [1]),
])
def test_roll(core: opforge.Core, shape: list, shift: object, axes: list) -> None:
    x = param(shape)
    m = Model([opforge.op("Roll", x, const(shift, np.int64), const(axes, np.int64))], [x])
    _supported(core, m)
    check(core, m, [rand(shape)])


def test_roll_shift_and_axes_fed_at_run_time(core: opforge.Core) -> None:
    x = param([3, 4, 2], "f32")
    s, a = param([2], "i32", "shift"), param([2], "i64", "axes")
    m = Model([opforge.op("Roll", x, s, a)], [x, s, a])
    _supported(core, m)
    data = rand([3, 4, 2])
    for shift, axes in (([1, 1], [0, 1]), ([-3, 5], [1, 2]), ([2, 2], [0, 0])):
        check(core, m, [data, np.array(shift, np.int32), np.array(axes, np.int64)])
    b = param([4, 3], "boolean")
    mb = Model([opforge.op("Roll", b, const(-1, np.int64), const([0, 1], np.int64))], [b])
    check(core, mb, [rand([4, 3], np.bool_)])


@pytest.mark.parametrize(("shape", "ishape", "axis", "itype"), [
    ([5, 3], [2], 0, np.int64), ([2, 6, 3], [2, 2], 1, np.int32), ([2, 3, 4], [3], -1, np.int64),
    ([4], [], 0, np.int64), ([3, 4], [0], 1, np.int64),
])
def test_scatter_update(core: opforge.Core, shape: list, ishape: list, axis: int, itype: object) -> None:
    rank = len(shape)
    ax = axis % rank
    ushape = [*shape[:ax], *ishape, *shape[ax + 1:]]
    x, u = param(shape, name="x"), param(ushape, name="u")
    idx = np.random.default_rng(3).integers(0, shape[ax], ishape).astype(itype)
    y = opforge.op("ScatterUpdate", x, const(idx, itype), u, const(axis, np.int64))
    m = Model([y], [x, u])
    _supported(core, m)
    check(core, m, [rand(shape), rand(ushape, seed=1)])


def test_scatter_update_duplicates_run_time_axis_and_errors(core: opforge.Core) -> None:
    from opforge.errors import KernelError

    x, i, u = param([3, 3], "i32", "x"), param([3], "i64", "i"), param([3, 3], "i32", "u")
    a = param([], "i64", "axis")
    y = opforge.op("ScatterUpdate", x, i, u, a, name="su")
    m = Model([y], [x, i, u, a])
    _supported(core, m)
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
