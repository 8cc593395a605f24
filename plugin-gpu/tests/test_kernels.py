"""Every built-in kernel against the NumPy reference, for several shapes and attributes."""

from __future__ import annotations

import numpy as np
import opforge
import pytest
from gpu_util import check, const, param, rand
from opforge.graph import Model

UNARY = ["Relu", "Abs", "Negative", "Sigmoid", "Tanh", "Exp", "Sqrt", "Erf", "Sin", "Cos", "Atan",
         "Floor", "Ceiling", "Sign", "SoftPlus", "HSwish", "HSigmoid", "Mish", "Log"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(core: opforge.Core, op: str) -> None:
    x = param([2, 3, 5])
    low = 0.1 if op in ("Sqrt", "Log") else -3
    check(core, Model([opforge.op(op, x)], [x]), [rand([2, 3, 5], low=low, high=3)])


@pytest.mark.parametrize(("op", "attrs"), [
    ("Clamp", {"min": -0.5, "max": 0.7}), ("Elu", {"alpha": 0.3}), ("Gelu", {"approximation_mode": "ERF"}),
    ("Gelu", {"approximation_mode": "TANH"}), ("Round", {"mode": "half_to_even"}),
    ("Round", {"mode": "half_away_from_zero"}),
])
def test_unary_attrs(core: opforge.Core, op: str, attrs: dict) -> None:
    x = param([4, 7])
    data = rand([4, 7], low=-3, high=3)
    if op == "Round":
        data = np.round(data * 2) / 2  # exact halves exercise the rounding mode
    check(core, Model([opforge.op(op, x, **attrs)], [x]), [data])


@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ([2, 3, 4], [2, 3, 4]), ([2, 3, 4], [1]), ([1], [2, 3, 4]), ([2, 1, 4], [3, 1]), ([4], [2, 3, 4]),
])
@pytest.mark.parametrize("op", ["Add", "Subtract", "Multiply", "Divide", "Maximum", "SquaredDifference"])
def test_binary_broadcast(core: opforge.Core, op: str, a_shape: list, b_shape: list) -> None:
    a, b = param(a_shape, name="a"), param(b_shape, name="b")
    check(core, Model([opforge.op(op, a, b)], [a, b]), [rand(a_shape, seed=1), rand(b_shape, seed=2, low=0.5)])


@pytest.mark.parametrize("op", ["Power", "FloorMod", "Mod", "Minimum"])
def test_binary_float(core: opforge.Core, op: str) -> None:
    a, b = param([3, 4], name="a"), param([4], name="b")
    check(core, Model([opforge.op(op, a, b)], [a, b]), [rand([3, 4], low=0.5, high=3), rand([4], seed=3, low=0.5)])


@pytest.mark.parametrize("op", ["Add", "Multiply", "Divide", "FloorMod", "Maximum"])
@pytest.mark.parametrize("et", ["i32", "i64"])
def test_binary_integer(core: opforge.Core, op: str, et: str) -> None:
    dt = np.int32 if et == "i32" else np.int64
    a, b = param([3, 4], et, "a"), param([3, 4], et, "b")
    bv = rand([3, 4], dt, seed=5, low=-5, high=5)
    bv[bv == 0] = 3
    check(core, Model([opforge.op(op, a, b)], [a, b]), [rand([3, 4], dt, low=-9, high=9), bv])


@pytest.mark.parametrize("op", ["Equal", "Less", "GreaterEqual"])
def test_compare_and_select(core: opforge.Core, op: str) -> None:
    a, b = param([2, 5], name="a"), param([5], name="b")
    cond = opforge.op(op, a, b)
    y = opforge.op("Select", cond, a, b)
    z = opforge.op("LogicalNot", cond)
    av = rand([2, 5])
    bv = av[1].copy()
    check(core, Model([cond, y, z], [a, b]), [av, bv])


def test_logical(core: opforge.Core) -> None:
    a, b = param([6], "boolean", "a"), param([6], "boolean", "b")
    outs = [opforge.op(o, a, b) for o in ("LogicalAnd", "LogicalOr", "LogicalXor")]
    check(core, Model(outs, [a, b]), [rand([6], np.bool_), rand([6], np.bool_, seed=1)])


@pytest.mark.parametrize(("src", "dst"), [("f32", "i32"), ("f32", "i64"), ("i64", "f32"), ("f32", "boolean"),
                                          ("boolean", "f32"), ("i32", "i64"), ("f32", "f16")])
def test_convert(core: opforge.Core, src: str, dst: str) -> None:
    dt = {"f32": np.float32, "i32": np.int32, "i64": np.int64, "boolean": np.bool_}[src]
    x = param([2, 6], src)
    data = rand([2, 6], dt, low=-7, high=7)
    if src == "f32":
        data[0, :3] = [0.0, -2.7, 2.7]
    check(core, Model([opforge.op("Convert", x, destination_type=dst)], [x]), [data], atol=1e-3)


def _conv(x: opforge.Node, w: np.ndarray, grouped: bool = False, **attrs: object) -> opforge.Node:
    a = {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1]}
    a.update(attrs)
    return opforge.op("GroupConvolution" if grouped else "Convolution", x, const(w), **a)


@pytest.mark.parametrize(("shape", "wshape", "attrs"), [
    ([1, 3, 7, 7], [5, 3, 3, 3], {"pads_begin": [1, 1], "pads_end": [1, 1]}),
    ([2, 4, 9, 8], [6, 4, 3, 3], {"strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1]}),
    ([1, 8, 6, 6], [70, 8, 1, 1], {}),
    ([1, 2, 9, 9], [3, 2, 3, 3], {"dilations": [2, 2], "auto_pad": "same_upper"}),
    ([2, 3, 11], [4, 3, 3], {"strides": [2], "pads_begin": [1], "pads_end": [0], "dilations": [1]}),
])
def test_convolution(core: opforge.Core, shape: list, wshape: list, attrs: dict) -> None:
    x = param(shape)
    check(core, Model([_conv(x, rand(wshape, seed=7), **attrs)], [x]), [rand(shape)])


@pytest.mark.parametrize(("shape", "wshape"), [([1, 6, 8, 8], [6, 1, 1, 3, 3]), ([2, 8, 5, 5], [2, 3, 4, 3, 3])])
def test_group_convolution(core: opforge.Core, shape: list, wshape: list) -> None:
    x = param(shape)
    y = _conv(x, rand(wshape, seed=4), grouped=True, pads_begin=[1, 1], pads_end=[1, 1])
    check(core, Model([y], [x]), [rand(shape)])


def test_conv_epilogue_fusion(core: opforge.Core) -> None:
    """Conv -> BatchNorm -> Add(residual) -> Clamp folds into one launch and stays exact."""
    x, r = param([1, 4, 6, 6], name="x"), param([1, 6, 6, 6], name="r")
    c = _conv(x, rand([6, 4, 3, 3], seed=9), pads_begin=[1, 1], pads_end=[1, 1])
    bn = opforge.op("BatchNormInference", c, const(rand([6], low=0.5)), const(rand([6], seed=2)),
                    const(rand([6], seed=3)), const(rand([6], seed=4, low=0.5, high=2)), epsilon=1e-5)
    y = opforge.op("Clamp", opforge.op("Add", bn, r), min=-1.0, max=1.5)
    m = Model([y], [x, r])
    check(core, m, [rand([1, 4, 6, 6]), rand([1, 6, 6, 6], seed=5)])
    compiled = core.compile_model(m, "GPU", {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    req.infer([rand([1, 4, 6, 6]), rand([1, 6, 6, 6], seed=5)])
    assert [c["kernel"] for c in req.get_profiling_info()] == ["conv_gemm"]


@pytest.mark.parametrize(("a", "b", "ta", "tb"), [
    ([5, 7], [7, 3], False, False), ([3, 33, 20], [20, 70], False, False), ([2, 1, 4, 6], [3, 5, 6], False, True),
    ([6, 5], [6, 9], True, False), ([7], [7, 4], False, False), ([2, 3, 8], [8], False, False),
])
def test_matmul(core: opforge.Core, a: list, b: list, ta: bool, tb: bool) -> None:
    pa, pb = param(a, name="a"), param(b, name="b")
    y = opforge.op("MatMul", pa, pb, transpose_a=ta, transpose_b=tb)
    check(core, Model([y], [pa, pb]), [rand(a), rand(b, seed=1)])


def test_matmul_bias_relu(core: opforge.Core) -> None:
    x = param([4, 16])
    y = opforge.op("MatMul", x, const(rand([10, 16], seed=3)), transpose_a=False, transpose_b=True)
    y = opforge.op("Relu", opforge.op("Add", y, const(rand([10], seed=4))))
    check(core, Model([y], [x]), [rand([4, 16])])


@pytest.mark.parametrize("attrs", [
    {"kernel": [3, 3], "strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1]},
    {"kernel": [2, 2], "strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0], "rounding_type": "ceil"},
])
def test_pooling(core: opforge.Core, attrs: dict) -> None:
    x = param([2, 3, 7, 7])
    mp = opforge.op("MaxPool", x, dilations=[1, 1], **attrs)
    ap = opforge.op("AvgPool", x, exclude_pad=False, **attrs)
    ap2 = opforge.op("AvgPool", x, exclude_pad=True, **attrs)
    check(core, Model([mp.output(0), mp.output(1), ap, ap2], [x]), [rand([2, 3, 7, 7])])


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2"])
@pytest.mark.parametrize(("axes", "keep"), [([1], True), ([0, 2], False), ([-1], False)])
def test_reduce(core: opforge.Core, op: str, axes: list, keep: bool) -> None:
    x = param([3, 4, 5])
    y = opforge.op(op, x, const(axes, np.int64), keep_dims=keep)
    check(core, Model([y], [x]), [rand([3, 4, 5], low=0.5, high=1.5)])


@pytest.mark.parametrize(("shape", "axis"), [([2, 10], -1), ([2, 3, 4, 5], 1), ([4, 300], 1)])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax(core: opforge.Core, op: str, shape: list, axis: int) -> None:
    x = param(shape)
    check(core, Model([opforge.op(op, x, axis=axis)], [x]), [rand(shape, low=-5, high=5)])


@pytest.mark.parametrize(("axes", "mode", "norm"), [([2, 3], "inside_sqrt", True), ([-1], "outside_sqrt", True),
                                                    ([1], "inside_sqrt", False)])
def test_mvn(core: opforge.Core, axes: list, mode: str, norm: bool) -> None:
    x = param([2, 3, 4, 5])
    y = opforge.op("MVN", x, const(axes, np.int64), normalize_variance=norm, eps=1e-5, eps_mode=mode)
    check(core, Model([y], [x]), [rand([2, 3, 4, 5])])


def test_movement(core: opforge.Core) -> None:
    x = param([2, 3, 4])
    t = opforge.op("Transpose", x, const([2, 0, 1], np.int64))
    r = opforge.op("Reshape", t, const([4, 6], np.int64), special_zero=False)
    u = opforge.op("Unsqueeze", r, const([0], np.int64))
    s = opforge.op("Squeeze", u, const([0], np.int64))
    cat = opforge.op("Concat", s, opforge.op("Relu", s), const(np.ones((4, 2))), axis=1)
    sl = opforge.op("Slice", cat, const([1, 0], np.int64), const([4, 13], np.int64), const([2, 3], np.int64))
    ss = opforge.op("StridedSlice", x, const([0, -1, 0], np.int64), const([2, -4, 4], np.int64),
                    const([1, -1, 2], np.int64), begin_mask=[0, 0, 1], end_mask=[0, 0, 1])
    sp = opforge.op("Split", x, const(2, np.int64), num_splits=2)
    vs = opforge.op("VariadicSplit", x, const(1, np.int64), const([1, -1], np.int64))
    outs = [cat, sl, ss, sp.output(0), sp.output(1), vs.output(0), vs.output(1)]
    check(core, Model(outs, [x]), [rand([2, 3, 4])])


def test_broadcast_tile_pad(core: opforge.Core) -> None:
    x = param([3, 1])
    b = opforge.op("Broadcast", x, const([2, 3, 4], np.int64), mode="numpy")
    t = opforge.op("Tile", x, const([2, 3], np.int64))
    p = opforge.op("Pad", x, const([1, 0], np.int64), const([0, 2], np.int64), const(1.5), pad_mode="constant")
    check(core, Model([b, t, p], [x]), [rand([3, 1])])


@pytest.mark.parametrize(("dshape", "ishape", "axis", "bd"), [([10, 4], [2, 3], 0, 0), ([2, 5, 3], [2, 4], 1, 1),
                                                            ([3, 6], [5], 1, 0)])
def test_gather(core: opforge.Core, dshape: list, ishape: list, axis: int, bd: int) -> None:
    d, i = param(dshape, name="d"), param(ishape, "i64", "i")
    y = opforge.op("Gather", d, i, const(axis, np.int64), batch_dims=bd)
    n = dshape[axis]
    check(core, Model([y], [d, i]), [rand(dshape), rand(ishape, np.int64, seed=3, low=-n, high=n - 1)])


def test_shape_of_is_folded(core: opforge.Core) -> None:
    x = param([2, 3, 4])
    shp = opforge.op("ShapeOf", x, output_type="i64")
    flat = opforge.op("Reshape", x, opforge.op("Concat", opforge.op("Gather", shp, const([0], np.int64),
                                                                    const(0, np.int64)),
                                                 const([-1], np.int64), axis=0), special_zero=False)
    check(core, Model([flat, shp], [x]), [rand([2, 3, 4])])


def test_prelu(core: opforge.Core) -> None:
    x = param([2, 3, 4])
    check(core, Model([opforge.op("PRelu", x, const([0.1, 0.2, 0.3]))], [x]), [rand([2, 3, 4])])
