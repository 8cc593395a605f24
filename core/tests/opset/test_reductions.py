"""Reduce* operations: shape inference from constant and unknown axes, and the reference checked
against OpenVINO's CPU device (one compiled model for the whole group)."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from opforge.element_type import Type
from opforge.errors import KernelError, ShapeInferenceError
from opforge.graph import Model, Node
from opforge.reference import evaluate_model
from opforge.shape import PartialShape

from .oracle import assert_matches, const, evaluate, make, openvino_outputs, param

RNG = np.random.default_rng(0)
SHAPE = (2, 3, 4)

NUMERIC = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2"]
LOGICAL = ["ReduceLogicalAnd", "ReduceLogicalOr"]
ALL = NUMERIC + LOGICAL
OV_NAME = {
    "ReduceSum": "reduce_sum",
    "ReduceMean": "reduce_mean",
    "ReduceMax": "reduce_max",
    "ReduceMin": "reduce_min",
    "ReduceProd": "reduce_prod",
    "ReduceL1": "reduce_l1",
    "ReduceL2": "reduce_l2",
    "ReduceLogicalAnd": "reduce_logical_and",
    "ReduceLogicalOr": "reduce_logical_or",
}


def axes_const(v: Any) -> Node:
    return const(v, np.int64)


def reduce(op: str, x: np.ndarray, axes: Any, keep_dims: bool = False) -> np.ndarray:
    """Evaluate a reduction by reference with constant axes; checks the inferred type and shape."""
    node = make(op, param(Type.from_numpy(x.dtype), x.shape), axes_const(axes), keep_dims=keep_dims)
    (out,) = evaluate(node, [x])
    assert node.output_specs[0].shape == PartialShape(out.shape)  # constant axes: the shape is fully known
    return out


# --- against OpenVINO --------------------------------------------------------------------------
INPUTS: dict[str, np.ndarray] = {
    "f32": RNG.uniform(-3, 3, SHAPE).astype(np.float32),
    "f32_prod": RNG.uniform(0.5, 1.5, SHAPE).astype(np.float32),
    "i32": RNG.integers(-9, 10, SHAPE).astype(np.int32),
    "i32_prod": RNG.integers(-3, 4, SHAPE).astype(np.int32),
    "bool": RNG.random(SHAPE) < 0.6,
}
AXES_VARIANTS: list[Any] = [[1], [0, 2], [-1], 0, [0, 1, 2]]

CASES: list[tuple[str, str, Any, bool]] = []
for _op in NUMERIC:
    _inputs = ("f32_prod", "i32_prod") if _op == "ReduceProd" else ("f32", "i32")
    for _i, _axes in enumerate(AXES_VARIANTS):
        CASES.append((_op, _inputs[0], _axes, _i % 2 == 0))
    CASES.append((_op, _inputs[1], [0, 2], False))
    CASES.append((_op, _inputs[1], [-1], True))
for _op in LOGICAL:
    for _i, _axes in enumerate(AXES_VARIANTS):
        CASES.append((_op, "bool", _axes, _i % 2 == 1))
CASE_IDS = [f"{op}-{inp}-{axes}-{'keep' if kd else 'drop'}" for op, inp, axes, kd in CASES]


@pytest.fixture(scope="module")
def ov_results() -> list[np.ndarray]:
    names = list(INPUTS)

    def build(ops: Any, params: list[Any]) -> list[Any]:
        by_name = dict(zip(names, params))
        return [
            getattr(ops, OV_NAME[op])(by_name[inp], ops.constant(np.asarray(axes, np.int64)), kd)
            for op, inp, axes, kd in CASES
        ]

    return openvino_outputs(build, [INPUTS[n] for n in names])


@pytest.mark.openvino
@pytest.mark.parametrize("index", range(len(CASES)), ids=CASE_IDS)
def test_reduction_matches_openvino(index: int, ov_results: list[np.ndarray]) -> None:
    op, inp, axes, keep_dims = CASES[index]
    ours = reduce(op, INPUTS[inp], axes, keep_dims)
    theirs = ov_results[index]
    assert ours.shape == theirs.shape
    assert_matches(ours, theirs, rtol=1e-5, atol=1e-5)


# --- semantics -----------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ALL)
def test_empty_axes_is_identity(op: str) -> None:
    x = INPUTS["bool" if op in LOGICAL else "f32"]
    for keep_dims in (False, True):
        np.testing.assert_array_equal(reduce(op, x, np.zeros(0, np.int64), keep_dims), x)


def test_values_against_numpy() -> None:
    x = INPUTS["f32"].astype(np.float64)
    np.testing.assert_allclose(reduce("ReduceSum", x, [0, 2]), x.sum(axis=(0, 2)))
    np.testing.assert_allclose(reduce("ReduceMean", x, [1], True), x.mean(axis=1, keepdims=True))
    np.testing.assert_allclose(reduce("ReduceL1", x, [-1]), np.abs(x).sum(axis=-1))
    np.testing.assert_allclose(reduce("ReduceL2", x, [-1]), np.sqrt((x * x).sum(axis=-1)))
    np.testing.assert_allclose(reduce("ReduceProd", x, [2]), x.prod(axis=2))
    # Repeated axes reduce once.
    np.testing.assert_allclose(reduce("ReduceMax", x, [1, -2, 1]), x.max(axis=1))


def test_integer_reductions_follow_cpp() -> None:
    x = np.array([[1, 2, 4], [-1, -2, -4]], np.int32)
    np.testing.assert_array_equal(reduce("ReduceMean", x, [1]), [2, -2])  # 7/3 truncated toward zero
    np.testing.assert_array_equal(reduce("ReduceL2", x, [1]), [4, 4])  # sqrt(21) truncated
    u = np.array([200, 200, 201], np.uint8)
    np.testing.assert_array_equal(reduce("ReduceSum", u, [0]), 601 % 256)  # wraps around
    np.testing.assert_array_equal(reduce("ReduceMean", u, [0]), 200)  # accumulated in 64 bits


def test_reductions_over_no_elements() -> None:
    x = np.zeros((2, 0), np.float32)
    lowest, highest = np.finfo(np.float32).min, np.finfo(np.float32).max
    np.testing.assert_array_equal(reduce("ReduceSum", x, [1]), [0, 0])
    np.testing.assert_array_equal(reduce("ReduceProd", x, [1]), [1, 1])
    np.testing.assert_array_equal(reduce("ReduceMax", x, [1]), [lowest, lowest])
    np.testing.assert_array_equal(reduce("ReduceMin", x, [1]), [highest, highest])
    assert np.isnan(reduce("ReduceMean", x, [1])).all()
    np.testing.assert_array_equal(reduce("ReduceMax", x.astype(np.int8), [1]), [-128, -128])
    np.testing.assert_array_equal(reduce("ReduceLogicalAnd", x.astype(bool), [1]), [True, True])
    np.testing.assert_array_equal(reduce("ReduceLogicalOr", x.astype(bool), [1]), [False, False])


def test_max_min_propagate_nan() -> None:
    # IEEE/ONNX semantics: a NaN anywhere in the reduced range makes the maximum and minimum NaN
    # (OpenVINO's CPU plugin skips it; opforge follows ONNX, see tests/test_special_values.py).
    x = np.array([1.0, np.nan, 3.0], np.float32)
    assert np.isnan(reduce("ReduceMax", x, [0]))
    assert np.isnan(reduce("ReduceMin", x, [0]))
    assert reduce("ReduceMax", np.array([1.0, 3.0], np.float32), [0]) == 3.0


@pytest.mark.parametrize("op", NUMERIC)
@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "u64"])
def test_output_dtype_is_inferred_type(op: str, t: str) -> None:
    x = np.array([[1, 2, 3], [4, 5, 6]]).astype(Type.parse(t).np)
    assert reduce(op, x, [1]).dtype == Type.parse(t).np
    assert reduce(op, x, [0, 1], True).shape == (1, 1)


# --- shape and type inference --------------------------------------------------------------------
@pytest.mark.parametrize("op", ALL)
def test_shape_inference(op: str) -> None:
    t = "boolean" if op in LOGICAL else "f32"

    def spec(data: Any, axes: Node, keep_dims: bool = False) -> PartialShape:
        s = opforge.op(op, param(t, data), axes, keep_dims=keep_dims).output_specs[0]
        assert s.type is Type.parse(t)
        return s.shape

    assert spec([6, 12, 10, 24], axes_const([2, 3])) == PartialShape([6, 12])
    assert spec([6, 12, 10, 24], axes_const([2, 3]), True) == PartialShape([6, 12, 1, 1])
    assert spec([6, 12, 10, 24], axes_const([-2])) == PartialShape([6, 12, 24])
    assert spec([6, 12, 10, 24], axes_const(1)) == PartialShape([6, 10, 24])
    assert spec([None, 12, None], axes_const([1])) == PartialShape([None, None])
    assert spec([None, 12, None], axes_const([0]), True) == PartialShape([1, 12, None])
    assert spec([2, 3], axes_const(np.zeros(0))) == PartialShape([2, 3])
    assert spec(PartialShape.dynamic(), axes_const([0])) == PartialShape.dynamic()
    assert spec(PartialShape.dynamic(), axes_const(np.zeros(0))) == PartialShape.dynamic()
    # Axes known only by their shape.
    assert spec([2, 3, 4], param("i64", [2])) == PartialShape.dynamic()
    assert spec([2, 3, 4], param("i64", [2]), True) == PartialShape([None, None, None])
    assert spec([2, 3, 4], param("i32", [])) == PartialShape([None, None])
    assert spec([2, 3, 4], param("i32", [1])) == PartialShape([None, None])
    assert spec([2, 3, 4], param("i64", [0])) == PartialShape([2, 3, 4])
    assert spec([2, 3, 4], param("i64", [None])) == PartialShape.dynamic()
    assert spec(PartialShape.dynamic(), param("i64", [2]), True) == PartialShape.dynamic()
    # A scalar can only be "reduced" over no axes.
    assert spec([], param("i64", [None])) == PartialShape([])


@pytest.mark.parametrize("op", ALL)
def test_bad_inputs(op: str) -> None:
    t = "boolean" if op in LOGICAL else "f32"
    with pytest.raises(ShapeInferenceError, match=rf"\({op}\).*axis 3 is out of range \[-3, 2\]"):
        opforge.op(op, param(t, [2, 3, 4]), axes_const([0, 3]))
    with pytest.raises(ShapeInferenceError, match=r"axis -4 is out of range"):
        opforge.op(op, param(t, [2, 3, 4]), axes_const(-4))
    with pytest.raises(ShapeInferenceError, match=r"axes\) must be a scalar or 1-D"):
        opforge.op(op, param(t, [2, 3, 4]), axes_const([[0]]))
    with pytest.raises(ShapeInferenceError, match=r"axes\) has element type float32, expected an integer"):
        opforge.op(op, param(t, [2, 3, 4]), opforge.op("Constant", value=np.array([0.0], np.float32)))
    with pytest.raises(ShapeInferenceError, match="data is a scalar"):
        opforge.op(op, param(t, []), param("i64", [1]))
    bad = "f32" if op in LOGICAL else "boolean"
    with pytest.raises(ShapeInferenceError, match=r"data\) has element type"):
        opforge.op(op, param(bad, [2]), axes_const([0]))


def test_evaluate_rejects_out_of_range_axes_from_a_parameter() -> None:
    x = param("f32", [2, 3])
    axes = param("i64", [1])
    node = opforge.op("ReduceSum", x, axes)
    with pytest.raises(KernelError, match=r"axes \[2\] are out of range \[-2, 1\]"):
        evaluate_model(Model([node], [x, axes]), [np.zeros((2, 3), np.float32), np.array([2])])
