"""Kernels added for the ONNX node suite, and plans that depend on values fed at run time, each
against the NumPy reference (``opforge.reference.evaluate_model``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from gpu_util import check, const, param, rand
from opforge.graph import Model


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


# --- TopK, CumSum, Range, OneHot -------------------------------------------------------------
@pytest.mark.parametrize(("mode", "sort", "axis"), [("max", "value", 1), ("min", "value", 0), ("max", "index", -1),
                                                     ("min", "none", 1)])
def test_topk(core: opforge.Core, mode: str, sort: str, axis: int) -> None:
    x = param([4, 6, 3])
    data = np.round(rand([4, 6, 3]) * 2) / 2  # ties exercise the lowest-index-first order
    t = opforge.op("TopK", x, const(3, np.int64), axis=axis, mode=mode, sort=sort, index_element_type="i32")
    check(core, Model([t.output(0), t.output(1)], [x]), [data])


def test_topk_integer_runtime_k(core: opforge.Core) -> None:
    x = param([3, 5], "i32")
    k = param([], "i64", "k")
    t = opforge.op("TopK", x, k, axis=1, mode="max", sort="value", index_element_type="i64")
    m = Model([t.output(0), t.output(1)], [x, k])
    for kv in (1, 4):
        check(core, m, [rand([3, 5], np.int32, low=-9, high=9), np.array(kv, np.int64)])


@pytest.mark.parametrize(("exclusive", "reverse"), [(False, False), (True, False), (False, True), (True, True)])
def test_cumsum(core: opforge.Core, exclusive: bool, reverse: bool) -> None:
    x = param([3, 5, 2])
    y = opforge.op("CumSum", x, const(1, np.int64), exclusive=exclusive, reverse=reverse)
    check(core, _one(y, [x]), [rand([3, 5, 2])])


@pytest.mark.parametrize(("et", "vals"), [("i64", (2, 17, 3)), ("f32", (0.5, 3.0, 0.25)), ("i32", (10, -4, -3))])
def test_range_fed_at_run_time(core: opforge.Core, et: str, vals: tuple) -> None:
    dt = {"i64": np.int64, "i32": np.int32, "f32": np.float32}[et]
    ps = [param([], et, n) for n in ("a", "b", "c")]
    y = opforge.op("Range", *ps, output_type=et)
    check(core, _one(y, ps), [np.array(v, dt) for v in vals])


def test_one_hot(core: opforge.Core) -> None:
    idx = param([2, 3], "i32", "idx")
    y = opforge.op("OneHot", idx, const(5, np.int64), const(2.0), const(-1.0), axis=1)
    check(core, _one(y, [idx]), [np.array([[0, 4, 2], [1, 7, 3]], np.int32)])


# --- gathers and scatters --------------------------------------------------------------------
def test_gather_elements_and_nd(core: opforge.Core) -> None:
    x = param([3, 4])
    i1 = param([3, 2], "i64", "i1")
    i2 = param([2, 2], "i32", "i2")
    ge = opforge.op("GatherElements", x, i1, axis=1)
    gn = opforge.op("GatherND", x, i2, batch_dims=0)
    check(core, Model([ge, gn], [x, i1, i2]),
          [rand([3, 4]), np.array([[0, 3], [2, -1], [1, 1]], np.int64), np.array([[0, 1], [2, 3]], np.int32)])


@pytest.mark.parametrize("reduction", ["none", "sum", "prod", "max", "mean"])
def test_scatter_elements(core: opforge.Core, reduction: str) -> None:
    x = param([3, 4])
    upd = param([2, 4], name="u")
    y = opforge.op("ScatterElementsUpdate", x, const([[0, 1, 2, 0], [0, 2, 1, 0]], np.int64), upd,
                   const(0, np.int64), reduction=reduction, use_init_val=True)
    check(core, _one(y, [x, upd]), [rand([3, 4]), rand([2, 4], seed=3)])


@pytest.mark.parametrize("reduction", ["none", "sum", "min"])
def test_scatter_nd(core: opforge.Core, reduction: str) -> None:
    x = param([4, 3])
    upd = param([3, 3], name="u")
    y = opforge.op("ScatterNDUpdate", x, const([[1], [3], [1]], np.int64), upd, reduction=reduction,
                   version="opset15")
    check(core, _one(y, [x, upd]), [rand([4, 3]), rand([3, 3], seed=2)])


# --- layout: Pad modes, DepthToSpace/SpaceToDepth, ReverseSequence -----------------------------
@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric"])
def test_pad_modes(core: opforge.Core, mode: str) -> None:
    x = param([2, 3, 4])
    y = opforge.op("Pad", x, const([0, 2, 1], np.int64), const([1, 1, 3], np.int64), pad_mode=mode)
    check(core, _one(y, [x]), [rand([2, 3, 4])])


def test_pad_value_fed_at_run_time(core: opforge.Core) -> None:
    x = param([2, 3])
    v = param([], name="v")
    y = opforge.op("Pad", x, const([1, 0], np.int64), const([0, 2], np.int64), v, pad_mode="constant")
    check(core, _one(y, [x, v]), [rand([2, 3]), np.array(7.5, np.float32)])


@pytest.mark.parametrize("op", ["DepthToSpace", "SpaceToDepth"])
@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
def test_depth_space(core: opforge.Core, op: str, mode: str) -> None:
    shape = [1, 8, 2, 3] if op == "DepthToSpace" else [1, 2, 4, 6]
    x = param(shape)
    check(core, _one(opforge.op(op, x, block_size=2, mode=mode), [x]), [rand(shape)])


def test_reverse_sequence(core: opforge.Core) -> None:
    x = param([4, 3, 2])
    lens = param([3], "i32", "lens")
    y = opforge.op("ReverseSequence", x, lens, batch_axis=1, seq_axis=0)
    check(core, _one(y, [x, lens]), [rand([4, 3, 2]), np.array([4, 1, 2], np.int32)])


# --- convolutions and pooling -----------------------------------------------------------------
def _conv_attrs(n: int, stride: int = 1, pad: int = 1, dil: int = 1) -> dict[str, Any]:
    return {"strides": [stride] * n, "pads_begin": [pad] * n, "pads_end": [pad] * n, "dilations": [dil] * n}


def test_conv_3d_and_pool_3d(core: opforge.Core) -> None:
    x = param([1, 2, 5, 6, 4])
    w = const(rand([3, 2, 3, 3, 2], seed=1))
    c = opforge.op("Convolution", x, w, **_conv_attrs(3, pad=1))
    r = opforge.op("Relu", c)
    mp = opforge.op("MaxPool", x, kernel=[2, 2, 2], strides=[1, 2, 1], pads_begin=[0, 0, 0], pads_end=[1, 0, 1],
                    dilations=[1, 1, 2], rounding_type="floor")
    ap = opforge.op("AvgPool", x, kernel=[3, 2, 2], strides=[2, 2, 2], pads_begin=[1, 0, 1], pads_end=[1, 1, 1],
                    exclude_pad=False)
    check(core, Model([r, mp.output(0), ap], [x]), [rand([1, 2, 5, 6, 4])])


def test_conv_filters_fed_at_run_time(core: opforge.Core) -> None:
    x = param([2, 4, 7, 6])
    w = param([6, 4, 3, 3], name="w")
    wg = param([2, 6, 2, 3, 3], name="wg")
    y = opforge.op("Convolution", x, w, **_conv_attrs(2, stride=2))
    g = opforge.op("GroupConvolution", x, opforge.op("Multiply", wg, const(0.5)), **_conv_attrs(2))
    check(core, Model([y, g], [x, w, wg]), [rand([2, 4, 7, 6]), rand([6, 4, 3, 3], seed=4), rand([2, 6, 2, 3, 3])])


@pytest.mark.parametrize("grouped", [False, True])
def test_conv_backprop_data(core: opforge.Core, grouped: bool) -> None:
    x = param([1, 4, 3, 5])
    wv = rand([2, 2, 3, 3, 2], seed=1) if grouped else rand([4, 3, 3, 2], seed=1)
    op = "GroupConvolutionBackpropData" if grouped else "ConvolutionBackpropData"
    y = opforge.op(op, x, const(wv), strides=[2, 1], pads_begin=[1, 0], pads_end=[0, 1], dilations=[1, 2],
                   output_padding=[1, 0])
    check(core, _one(y, [x]), [rand([1, 4, 3, 5])])


def test_integer_matmul_conv_and_power(core: opforge.Core) -> None:
    a, b = param([2, 3, 4], "i32", "a"), param([4, 5], "i32", "b")
    x = param([1, 2, 4, 4], "i32", "x")
    mm = opforge.op("MatMul", a, b, transpose_a=False, transpose_b=False)
    cv = opforge.op("Convolution", x, const(rand([3, 2, 2, 2], np.int32, seed=2, low=-3, high=3), np.int32),
                    **_conv_attrs(2, pad=0))
    pw = opforge.op("Power", a, const(rand([4], np.int32, seed=5, low=0, high=5), np.int32))
    check(core, Model([mm, cv, pw], [a, b, x]),
          [rand([2, 3, 4], np.int32, low=-5, high=5), rand([4, 5], np.int32, seed=1, low=-5, high=5),
           rand([1, 2, 4, 4], np.int32, seed=3, low=-4, high=4)])


# --- Interpolate, LRN, MVN over scattered axes --------------------------------------------------
@pytest.mark.parametrize(("mode", "coord"), [("nearest", "asymmetric"), ("linear_onnx", "half_pixel"),
                                             ("cubic", "align_corners"), ("linear", "half_pixel")])
@pytest.mark.parametrize("scale", [2.0, 0.5])
def test_interpolate(core: opforge.Core, mode: str, coord: str, scale: float) -> None:
    x = param([1, 2, 4, 6])
    y = opforge.op("Interpolate", x, const([scale, scale], np.float32), const([2, 3], np.int64), mode=mode,
                   shape_calculation_mode="scales", coordinate_transformation_mode=coord, nearest_mode="floor",
                   antialias=mode == "linear")
    check(core, _one(y, [x]), [rand([1, 2, 4, 6])])


def test_lrn(core: opforge.Core) -> None:
    x = param([2, 6, 3, 3])
    y = opforge.op("LRN", x, const([1], np.int64), alpha=1e-3, beta=0.75, bias=1.0, size=3)
    z = opforge.op("LRN", x, const([2, 3], np.int64), alpha=1e-2, beta=0.5, bias=2.0, size=2)
    check(core, Model([y, z], [x]), [rand([2, 6, 3, 3])])


def test_mvn_scattered_axes(core: opforge.Core) -> None:
    x = param([2, 3, 4, 5])
    y = opforge.op("MVN", x, const([0, 2, 3], np.int64), normalize_variance=True, eps=1e-9, eps_mode="inside_sqrt",
                   version="opset6")
    check(core, _one(y, [x]), [rand([2, 3, 4, 5])])


# --- element types: f64, u64, shifts, float -> narrow integers --------------------------------
def test_double_and_uint64(core: opforge.Core) -> None:
    a, b = param([3, 4], "f64", "a"), param([3, 4], "u64", "b")
    e = opforge.op("Exp", a)
    r = opforge.op("ReduceMax", a, const([1], np.int64), keep_dims=False)
    s = opforge.op("Add", b, b)
    c = opforge.op("Convert", a, destination_type="f32")
    check(core, Model([e, r, s, c], [a, b]), [rand([3, 4], np.float64), rand([3, 4], np.uint64, low=0, high=9)])


@pytest.mark.parametrize("op", ["BitwiseLeftShift", "BitwiseRightShift"])
@pytest.mark.parametrize("et", ["i32", "u8"])
def test_bit_shifts(core: opforge.Core, op: str, et: str) -> None:
    dt = np.int32 if et == "i32" else np.uint8
    a, b = param([6], et, "a"), param([6], et, "b")
    av = np.array([1, -8 if et == "i32" else 200, 5, 255, 3, 7]).astype(dt)
    bv = np.array([0, 1, 3, 7, 9, 40]).astype(dt)
    check(core, _one(opforge.op(op, a, b), [a, b]), [av, bv])


@pytest.mark.parametrize("dst", ["u8", "i8", "u16", "u32", "u64"])
def test_convert_float_to_narrow_int(core: opforge.Core, dst: str) -> None:
    x = param([8])
    data = np.array([0.5, -1.7, 255.9, 300.2, -300.0, 70000.5, np.nan, 3e9], np.float32)
    check(core, _one(opforge.op("Convert", x, destination_type=dst), [x]), [data])
