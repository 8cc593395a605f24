"""Every kernel against the NumPy reference (the oracle), over several shapes, attributes and
element types."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from cpu_testing import check, rand, single

F32 = np.float32

UNARY_FLOAT = {
    "Abs": (-3, 3), "Acos": (-0.9, 0.9), "Acosh": (1.1, 4), "Asin": (-0.9, 0.9), "Asinh": (-3, 3),
    "Atan": (-3, 3), "Atanh": (-0.9, 0.9), "Ceiling": (-3, 3), "Cos": (-3, 3), "Cosh": (-3, 3),
    "Erf": (-3, 3), "Exp": (-3, 3), "Floor": (-3, 3), "Log": (0.1, 4), "Negative": (-3, 3),
    "Relu": (-3, 3), "Sigmoid": (-5, 5), "Sign": (-3, 3), "Sin": (-3, 3), "Sinh": (-3, 3),
    "Sqrt": (0, 4), "Tan": (-1.2, 1.2), "Tanh": (-3, 3), "SoftPlus": (-5, 5), "SoftSign": (-3, 3),
    "HSwish": (-5, 5), "HSigmoid": (-5, 5), "Mish": (-5, 5),
}


@pytest.mark.parametrize("shape", [(7,), (2, 3, 5), (1, 16, 9, 9)])
@pytest.mark.parametrize("op", sorted(UNARY_FLOAT))
def test_unary_float(core: Any, op: str, shape: tuple[int, ...]) -> None:
    lo, hi = UNARY_FLOAT[op]
    x = rand(shape, F32, low=lo, high=hi)
    model, feeds = single(op, [x])
    check(core, model, feeds, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", ["Abs", "Negative", "Relu", "Sign", "Ceiling", "Floor"])
def test_unary_int(core: Any, op: str, dtype: Any) -> None:
    model, feeds = single(op, [rand((3, 5), dtype)])
    check(core, model, feeds)


BINARY = ["Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum", "SquaredDifference", "Power",
          "FloorMod", "Mod"]
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 4)), ((2, 3, 4), ()), ((5,), (2, 1, 5))]


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("op", BINARY)
def test_binary_float(core: Any, op: str, shapes: Any) -> None:
    a = rand(shapes[0], F32, seed=1, low=0.5 if op == "Power" else -3, high=3)
    b = rand(shapes[1], F32, seed=2, low=0.5, high=3) if op in ("Divide", "FloorMod", "Mod", "Power") else rand(shapes[1], F32, seed=2)
    model, feeds = single(op, [a, b])
    check(core, model, feeds, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", BINARY)
def test_binary_int(core: Any, op: str, dtype: Any) -> None:
    a = rand((3, 4), dtype, seed=1)
    b = rand((4,), dtype, seed=2)
    if op in ("Divide", "FloorMod", "Mod"):
        b[b == 0] = 3
    if op == "Power":
        a = np.abs(a) % 4
        b = np.abs(b) % 4
    model, feeds = single(op, [a, b])
    check(core, model, feeds)


@pytest.mark.parametrize("pythondiv", [True, False])
def test_divide_int_rounding(core: Any, pythondiv: bool) -> None:
    a = np.array([7, -7, 7, -7, 0], np.int32)
    b = np.array([2, 2, -2, -2, 3], np.int32)
    model, feeds = single("Divide", [a, b], m_pythondiv=pythondiv)
    check(core, model, feeds)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
@pytest.mark.parametrize("op", ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"])
def test_compare(core: Any, op: str, dtype: Any) -> None:
    a = rand((2, 3, 4), dtype, seed=3, low=-1, high=1)
    b = rand((3, 1), dtype, seed=4, low=-1, high=1)
    if dtype == np.float32:
        a = np.round(a)
        b = np.round(b)
    model, feeds = single(op, [a, b])
    check(core, model, feeds)


@pytest.mark.parametrize("op", ["LogicalAnd", "LogicalOr", "LogicalXor"])
def test_logical(core: Any, op: str) -> None:
    model, feeds = single(op, [rand((2, 5), np.bool_, seed=1), rand((5,), np.bool_, seed=2)])
    check(core, model, feeds)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_clamp(core: Any, dtype: Any) -> None:
    model, feeds = single("Clamp", [rand((4, 6), dtype)], min=-1.5, max=2.5)
    check(core, model, feeds)


@pytest.mark.parametrize("mode", ["ERF", "TANH"])
def test_gelu(core: Any, mode: str) -> None:
    model, feeds = single("Gelu", [rand((3, 17), F32, low=-4, high=4)], approximation_mode=mode)
    check(core, model, feeds, rtol=1e-5, atol=1e-6)


def test_elu(core: Any) -> None:
    model, feeds = single("Elu", [rand((3, 17), F32)], alpha=0.7)
    check(core, model, feeds, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["half_to_even", "half_away_from_zero"])
def test_round(core: Any, mode: str) -> None:
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6], F32)
    model, feeds = single("Round", [x], mode=mode)
    check(core, model, feeds)


@pytest.mark.parametrize(("src", "dst"), [
    (np.float32, "i32"), (np.float32, "i64"), (np.float32, "u8"), (np.int64, "f32"), (np.int32, "i64"),
    (np.float32, "boolean"), (np.bool_, "f32"), (np.float32, "f16"), (np.float32, "f64"), (np.int64, "i32"),
])
def test_convert(core: Any, src: Any, dst: str) -> None:
    x = rand((3, 7), src, low=-3, high=3)
    if np.dtype(src) == np.float32 and dst == "u8":
        x = np.abs(x)
    model, feeds = single("Convert", [x], destination_type=dst)
    check(core, model, feeds)


# ------------------------------------------------------------------ nn
CONVS = [
    dict(x=(1, 3, 9, 9), w=(8, 3, 3, 3), strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1]),
    dict(x=(2, 4, 10, 8), w=(6, 4, 3, 2), strides=[2, 1], pads_begin=[0, 1], pads_end=[1, 0], dilations=[1, 1]),
    dict(x=(1, 16, 12, 12), w=(32, 16, 1, 1), strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1]),
    dict(x=(1, 4, 11, 11), w=(4, 4, 3, 3), strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], dilations=[2, 2],
         auto_pad="same_upper"),
    dict(x=(1, 3, 10), w=(5, 3, 3), strides=[1], pads_begin=[1], pads_end=[1], dilations=[1]),
    dict(x=(1, 2, 5, 6, 6), w=(3, 2, 2, 3, 3), strides=[1, 1, 1], pads_begin=[0, 1, 1], pads_end=[0, 1, 1],
         dilations=[1, 1, 1]),
    dict(x=(1, 3, 7, 7), w=(4, 3, 3, 3), strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1],
         auto_pad="valid"),
]


@pytest.mark.parametrize("case", CONVS, ids=lambda c: f"x{c['x']}w{c['w']}")
def test_convolution(core: Any, case: dict[str, Any]) -> None:
    c = dict(case)
    x, w = rand(c.pop("x"), F32, seed=1), rand(c.pop("w"), F32, seed=2)
    model, feeds = single("Convolution", [x, w], const_inputs={1: w}, **c)
    check(core, model, feeds, rtol=1e-4, atol=1e-4)


def test_convolution_runtime_weights(core: Any) -> None:
    x, w = rand((1, 3, 8, 8), F32, seed=1), rand((4, 3, 3, 3), F32, seed=2)
    model, feeds = single("Convolution", [x, w], strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1])
    check(core, model, feeds, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("x", "w"), [((1, 8, 9, 9), (8, 1, 1, 3, 3)), ((2, 6, 7, 7), (3, 4, 2, 3, 3)),
                                      ((1, 32, 14, 14), (32, 1, 1, 3, 3))])
def test_group_convolution(core: Any, x: tuple[int, ...], w: tuple[int, ...]) -> None:
    xv, wv = rand(x, F32, seed=1), rand(w, F32, seed=2)
    model, feeds = single("GroupConvolution", [xv, wv], const_inputs={1: wv}, strides=[1, 1], pads_begin=[1, 1],
                          pads_end=[1, 1], dilations=[1, 1])
    check(core, model, feeds, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("grouped", [False, True])
def test_convolution_backprop_data(core: Any, grouped: bool) -> None:
    x = rand((1, 4, 5, 5), F32, seed=1)
    w = rand((2, 2, 3, 3, 3), F32, seed=2) if grouped else rand((4, 3, 3, 3), F32, seed=2)
    op = "GroupConvolutionBackpropData" if grouped else "ConvolutionBackpropData"
    model, feeds = single(op, [x, w], const_inputs={1: w}, strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
                          dilations=[1, 1])
    check(core, model, feeds, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("a", "b", "ta", "tb"), [
    ((4, 8), (8, 5), False, False), ((8, 4), (8, 5), True, False), ((4, 8), (5, 8), False, True),
    ((2, 3, 4, 8), (2, 3, 8, 6), False, False), ((2, 3, 4, 8), (8, 6), False, False), ((8,), (8, 3), False, False),
    ((3, 4, 8), (8,), False, False), ((1, 4, 8), (3, 6, 8), False, True),
])
@pytest.mark.parametrize("const_b", [True, False])
def test_matmul(core: Any, a: Any, b: Any, ta: bool, tb: bool, const_b: bool) -> None:
    av, bv = rand(a, F32, seed=1), rand(b, F32, seed=2)
    model, feeds = single("MatMul", [av, bv], const_inputs={1: bv} if const_b else {}, transpose_a=ta, transpose_b=tb)
    check(core, model, feeds, rtol=1e-4, atol=1e-4)


POOLS = [
    dict(x=(1, 3, 8, 8), kernel=[2, 2], strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0]),
    dict(x=(2, 4, 9, 9), kernel=[3, 3], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1]),
    dict(x=(1, 2, 7, 7), kernel=[3, 3], strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], rounding_type="ceil"),
    dict(x=(1, 2, 7, 7), kernel=[2, 2], strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], auto_pad="same_upper"),
]


@pytest.mark.parametrize("case", POOLS, ids=lambda c: f"{c['x']}k{c['kernel']}")
def test_max_pool(core: Any, case: dict[str, Any]) -> None:
    c = dict(case)
    x = rand(c.pop("x"), F32)
    model, feeds = single("MaxPool", [x], dilations=[1, 1], **c)
    check(core, model, feeds)


@pytest.mark.parametrize("exclude", [True, False])
@pytest.mark.parametrize("case", POOLS[:2] + POOLS[3:], ids=lambda c: f"{c['x']}k{c['kernel']}")
def test_avg_pool(core: Any, case: dict[str, Any], exclude: bool) -> None:
    c = dict(case)
    x = rand(c.pop("x"), F32)
    model, feeds = single("AvgPool", [x], exclude_pad=exclude, **c)
    check(core, model, feeds, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax(core: Any, op: str, axis: int) -> None:
    model, feeds = single(op, [rand((3, 4, 5), F32)], axis=axis)
    check(core, model, feeds, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axes", [[-1], [2, 3], [1, 2, 3]])
@pytest.mark.parametrize("eps_mode", ["inside_sqrt", "outside_sqrt"])
@pytest.mark.parametrize("variance", [True, False])
def test_mvn(core: Any, axes: list[int], eps_mode: str, variance: bool) -> None:
    x = rand((2, 3, 4, 5), F32)
    model, feeds = single("MVN", [x, np.array(axes, np.int64)], const_inputs={1: np.array(axes, np.int64)},
                          normalize_variance=variance, eps=1e-5, eps_mode=eps_mode)
    check(core, model, feeds, rtol=1e-4, atol=1e-5)


def test_batch_norm(core: Any) -> None:
    x = rand((2, 3, 4, 4), F32)
    g, b, m = rand((3,), F32, seed=1), rand((3,), F32, seed=2), rand((3,), F32, seed=3)
    v = rand((3,), F32, seed=4, low=0.5, high=2)
    model, feeds = single("BatchNormInference", [x, g, b, m, v], const_inputs={1: g, 2: b, 3: m, 4: v}, epsilon=1e-5)
    check(core, model, feeds, rtol=1e-5, atol=1e-5)


REDUCES = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2"]


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1], [0, 1, 2]])
@pytest.mark.parametrize("op", REDUCES)
def test_reduce(core: Any, op: str, axes: list[int], keep: bool) -> None:
    x = rand((3, 4, 5), F32, low=0.5 if op == "ReduceProd" else -2, high=1.5 if op == "ReduceProd" else 2)
    ax = np.array(axes, np.int64)
    model, feeds = single(op, [x, ax], const_inputs={1: ax}, keep_dims=keep)
    check(core, model, feeds, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin"])
def test_reduce_int(core: Any, op: str) -> None:
    x = rand((3, 4), np.int32)
    ax = np.array([1], np.int64)
    model, feeds = single(op, [x, ax], const_inputs={1: ax}, keep_dims=False)
    check(core, model, feeds)


@pytest.mark.parametrize("op", ["ReduceLogicalAnd", "ReduceLogicalOr"])
def test_reduce_logical(core: Any, op: str) -> None:
    x = rand((3, 4), np.bool_)
    ax = np.array([0], np.int64)
    model, feeds = single(op, [x, ax], const_inputs={1: ax}, keep_dims=True)
    check(core, model, feeds)


# ------------------------------------------------------------------ data movement
@pytest.mark.parametrize(("shape", "idx", "axis", "bd"), [
    ((5, 4), [[0, 2], [4, -1]], 0, 0), ((2, 5, 3), [1, 0, 4], 1, 0), ((2, 5, 3), [[1, 0], [4, 2]], 1, 1),
    ((100, 16), [[3, 7, 99, 0]], 0, 0),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_gather(core: Any, shape: Any, idx: Any, axis: int, bd: int, dtype: Any) -> None:
    x = rand(shape, dtype)
    i = np.array(idx, np.int64)
    model, feeds = single("Gather", [x, i, np.array(axis, np.int64)], const_inputs={2: np.array(axis, np.int64)},
                          batch_dims=bd)
    check(core, model, feeds)


@pytest.mark.parametrize(("shape", "perm"), [((2, 3, 4), [2, 0, 1]), ((1, 128, 4, 64), [0, 2, 1, 3]),
                                             ((5, 6), [1, 0]), ((2, 3, 4, 5), [0, 1, 2, 3])])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_transpose(core: Any, shape: Any, perm: Any, dtype: Any) -> None:
    p = np.array(perm, np.int64)
    model, feeds = single("Transpose", [rand(shape, dtype), p], const_inputs={1: p})
    check(core, model, feeds)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(core: Any, axis: int) -> None:
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    xs = [rand(s, F32, seed=i) for i, s in enumerate(shapes)]
    model, feeds = single("Concat", xs, axis=axis)
    check(core, model, feeds)


def test_split_and_variadic_split(core: Any) -> None:
    x = rand((4, 6), F32)
    ax = np.array(1, np.int64)
    model, feeds = single("Split", [x, ax], const_inputs={1: ax}, num_splits=3)
    check(core, model, feeds)
    lens = np.array([1, -1, 2], np.int64)
    model, feeds = single("VariadicSplit", [x, ax, lens], const_inputs={1: ax, 2: lens})
    check(core, model, feeds)


def test_reshape_squeeze_unsqueeze_shape_of(core: Any) -> None:
    x = rand((2, 1, 6), F32)
    s = np.array([3, -1], np.int64)
    check(core, *single("Reshape", [x, s], const_inputs={1: s}, special_zero=False))
    a = np.array([1], np.int64)
    check(core, *single("Squeeze", [x, a], const_inputs={1: a}))
    check(core, *single("Unsqueeze", [x, a], const_inputs={1: a}))
    check(core, *single("ShapeOf", [x]))


def test_slice_and_strided_slice(core: Any) -> None:
    x = rand((5, 6, 7), F32)
    start, stop, step, axes = (np.array(v, np.int64) for v in ([1, -1], [4, 0], [2, -2], [0, 2]))
    check(core, *single("Slice", [x, start, stop, step, axes], const_inputs={1: start, 2: stop, 3: step, 4: axes}))
    b, e, s = (np.array(v, np.int64) for v in ([0, 1, 0], [5, 5, 7], [1, 2, 3]))
    check(core, *single("StridedSlice", [x, b, e, s], const_inputs={1: b, 2: e, 3: s}, begin_mask=[0, 0, 1],
                        end_mask=[0, 0, 1], shrink_axis_mask=[1, 0, 0]))


def test_tile_broadcast_pad_reverse(core: Any) -> None:
    x = rand((2, 3), F32)
    r = np.array([2, 2], np.int64)
    check(core, *single("Tile", [x, r], const_inputs={1: r}))
    t = np.array([4, 2, 3], np.int64)
    check(core, *single("Broadcast", [x, t], const_inputs={1: t}, mode="numpy"))
    pb, pe = np.array([1, 0], np.int64), np.array([0, 2], np.int64)
    pv = np.array(7.5, F32)
    check(core, *single("Pad", [x, pb, pe, pv], const_inputs={1: pb, 2: pe}, pad_mode="constant"))
    check(core, *single("Pad", [x, pb, pe], const_inputs={1: pb, 2: pe}, pad_mode="reflect"))
    ax = np.array([1], np.int64)
    check(core, *single("Reverse", [x, ax], const_inputs={1: ax}, mode="index"))


def test_select(core: Any) -> None:
    c = rand((2, 1, 4), np.bool_)
    a, b = rand((3, 4), F32, seed=1), rand((2, 3, 1), F32, seed=2)
    check(core, *single("Select", [c, a, b]))
