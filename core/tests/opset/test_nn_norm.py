"""Normalisation ops (BatchNormInference-5, MVN-6, NormalizeL2-1, LRN-1, GRN-1) and Softmax-8 /
LogSoftmax-5: shape inference, errors, and the NumPy reference against OpenVINO."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from opforge.errors import AttributeValidationError, ShapeInferenceError
from opforge.opset import ops_in_module
from opforge.opset.batch_norm_inference import BatchNormInference
from opforge.opset.grn import GRN
from opforge.opset.log_softmax import LogSoftmax
from opforge.opset.lrn import LRN
from opforge.opset.mvn import MVN
from opforge.opset.normalize_l2 import NormalizeL2
from opforge.opset.softmax import Softmax
from opforge.shape import PartialShape

from .oracle import assert_close, check_ir_in_openvino, const, evaluate, make, ov_run, param, rng

SHAPE = (2, 5, 4, 6)


@pytest.mark.parametrize(
    ("module", "type_name", "version"),
    [
        ("batch_norm_inference", "BatchNormInference", "opset5"),
        ("mvn", "MVN", "opset6"),
        ("normalize_l2", "NormalizeL2", "opset1"),
        ("lrn", "LRN", "opset1"),
        ("grn", "GRN", "opset1"),
        ("softmax", "Softmax", "opset8"),
        ("log_softmax", "LogSoftmax", "opset5"),
    ],
)
def test_module_defines_one_op(module: str, type_name: str, version: str) -> None:
    assert [(o.type_name, o.version) for o in ops_in_module(module)] == [(type_name, version)]


def data() -> np.ndarray:
    return rng().standard_normal(SHAPE).astype(np.float32)


def axes(values: list[int]) -> Any:
    return const(np.array(values, dtype=np.int64))


# --- BatchNormInference ----------------------------------------------------------------
def bn_inputs(c: Any = 5, t: str = "f32") -> list[Any]:
    return [param(t, [c]) for _ in range(4)]


def test_batch_norm_shapes() -> None:
    n = make(BatchNormInference, param("f32", [2, 5, 4, 6]), *bn_inputs(), epsilon=1e-5)
    assert n.output_specs[0].shape == PartialShape([2, 5, 4, 6])
    # The channel count comes from gamma/beta/mean/variance when the data does not know it.
    n = make(BatchNormInference, param("f32", [None, None, 4]), *bn_inputs(), epsilon=1e-5)
    assert n.output_specs[0].shape == PartialShape([None, 5, 4])
    n = make(BatchNormInference, param("f32", PartialShape.dynamic()), *bn_inputs(), epsilon=1e-5)
    assert n.output_specs[0].shape.rank is None
    n = make(BatchNormInference, param("f32", [3, 7]), *bn_inputs(None), epsilon=1e-5)
    assert n.output_specs[0].shape == PartialShape([3, 7])


@pytest.mark.parametrize(
    ("data_shape", "params", "eps", "match"),
    [
        ([2, 5, 4], [[5], [5], [4], [5]], 1e-5, r"input 3 \(mean\) does not match the channel count: 5 vs 4"),
        ([2, 5, 4], [[5], [5, 1], [5], [5]], 1e-5, r"input 2 \(beta\) has shape \[5,1\], expected 1-D \[C\]"),
        ([5], [[5], [5], [5], [5]], 1e-5, r"input 0 \(data\) has rank 1, expected 2 or more"),
        ([2, 5], [[5], [5], [5], [5]], -1.0, "epsilon is -1.0, expected a non-negative value"),
    ],
)
def test_batch_norm_errors(data_shape: list[int], params: list[list[int]], eps: float, match: str) -> None:
    with pytest.raises(ShapeInferenceError, match=match):
        make(BatchNormInference, param("f32", data_shape), *[param("f32", s) for s in params], epsilon=eps)


def test_batch_norm_type_errors() -> None:
    with pytest.raises(
        ShapeInferenceError, match=r"input 4 \(variance\) has element type float16, expected float32"
    ):
        make(BatchNormInference, param("f32", [2, 5]), *bn_inputs()[:3], param("f16", [5]), epsilon=1e-5)
    with pytest.raises(ShapeInferenceError, match="expected a float type"):
        make(BatchNormInference, param("i32", [2, 5]), *bn_inputs(5, "i32"), epsilon=1e-5)
    with pytest.raises(AttributeValidationError, match="epsilon"):
        make(BatchNormInference, param("f32", [2, 5]), *bn_inputs())


@pytest.mark.openvino
def test_batch_norm_matches_openvino() -> None:
    import openvino.opset5 as ov5

    g = rng()
    x = g.standard_normal(SHAPE).astype(np.float32)
    gamma, beta, mean = (g.standard_normal(5).astype(np.float32) for _ in range(3))
    var = np.abs(g.standard_normal(5)).astype(np.float32)
    p = ov5.parameter(list(SHAPE), np.float32)
    want = ov_run(
        ov5.batch_norm_inference(p, *(ov5.constant(v) for v in (gamma, beta, mean, var)), 1e-3), [p], [x]
    )
    n = make(BatchNormInference, param("f32", SHAPE), *(const(v) for v in (gamma, beta, mean, var)), epsilon=1e-3)
    assert_close(evaluate(n, [x]), want)
    check_ir_in_openvino(n, [x])


# --- MVN ---------------------------------------------------------------------------------
def test_mvn_shapes_and_errors() -> None:
    attrs: dict[str, Any] = {"normalize_variance": True, "eps": 1e-5, "eps_mode": "inside_sqrt"}
    assert make(MVN, param("f32", [None, 5, None]), axes([-1]), **attrs).output_specs[0].shape == PartialShape(
        [None, 5, None]
    )
    assert make(MVN, param("f32", PartialShape.dynamic()), axes([1, 2]), **attrs).output_specs[0].shape.rank is None
    assert make(MVN, param("f32", [2, 3]), param("i32", [1]), **attrs).output_specs[0].shape == PartialShape([2, 3])
    with pytest.raises(
        ShapeInferenceError, match=r"input 1 \(axes\) value 3 is out of range \[-3, 2\] for rank 3"
    ):
        make(MVN, param("f32", [2, 3, 4]), axes([1, 3]), **attrs)
    with pytest.raises(ShapeInferenceError, match=r"input 1 \(axes\) \[1, -2\] repeat an axis"):
        make(MVN, param("f32", [2, 3, 4]), axes([1, -2]), **attrs)
    with pytest.raises(ShapeInferenceError, match=r"input 1 \(axes\) has element type float32"):
        make(MVN, param("f32", [2, 3, 4]), const(np.array([1.0], np.float32)), **attrs)
    with pytest.raises(ShapeInferenceError, match=r"input 1 \(axes\) has rank 0, expected 1"):
        make(MVN, param("f32", [2, 3, 4]), const(np.int64(1)), **attrs)
    with pytest.raises(
        ShapeInferenceError, match=r"input 1 \(axes\) has 4 elements, more than the data rank 3"
    ):
        make(MVN, param("f32", [2, 3, 4]), param("i64", [4]), **attrs)
    with pytest.raises(AttributeValidationError, match="eps_mode"):
        make(MVN, param("f32", [2, 3, 4]), axes([1]), **{**attrs, "eps_mode": "sqrt"})
    # IR files written by OpenVINO spell eps_mode in capitals.
    assert MVN.attrs_from_ir(
        "n", {"eps": "1e-5", "normalize_variance": "true", "eps_mode": "INSIDE_SQRT"}
    ) == MVN.make_attrs("n", attrs)


@pytest.mark.openvino
@pytest.mark.parametrize("ax", [[1], [2, 3], [1, 2, 3], [-1], [0, 2]])
@pytest.mark.parametrize(
    ("normalize_variance", "eps_mode"),
    [(True, "inside_sqrt"), (True, "outside_sqrt"), (False, "inside_sqrt")],
)
def test_mvn_matches_openvino(ax: list[int], normalize_variance: bool, eps_mode: str) -> None:
    import openvino.opset6 as ov6

    x = data()
    p = ov6.parameter(list(SHAPE), np.float32)
    want = ov_run(
        ov6.mvn(p, ov6.constant(np.array(ax, np.int64)), normalize_variance, 1e-3, eps_mode), [p], [x]
    )
    n = make(MVN, param("f32", SHAPE), axes(ax), normalize_variance=normalize_variance, eps=1e-3, eps_mode=eps_mode)
    assert_close(evaluate(n, [x]), want)


@pytest.mark.openvino
def test_mvn_ir_loads_in_openvino() -> None:
    n = make(MVN, param("f32", SHAPE), axes([2, 3]), normalize_variance=True, eps=1e-3, eps_mode="outside_sqrt")
    check_ir_in_openvino(n, [data()])


# --- NormalizeL2 -------------------------------------------------------------------------
def test_normalize_l2_shapes_and_errors() -> None:
    attrs = {"eps": 1e-6, "eps_mode": "add"}
    n = make(NormalizeL2, param("f32", [None, 5]), axes([1]), **attrs)
    assert n.output_specs[0].shape == PartialShape([None, 5])
    n = make(NormalizeL2, param("f32", [2, 5]), const(np.int64(1)), **attrs)  # a scalar axis
    assert n.output_specs[0].shape == PartialShape([2, 5])
    n = make(NormalizeL2, param("f32", PartialShape.dynamic()), axes([1]), **attrs)
    assert n.output_specs[0].shape.rank is None
    with pytest.raises(ShapeInferenceError, match=r"input 1 \(axes\) value -3 is out of range"):
        make(NormalizeL2, param("f32", [2, 5]), axes([-3]), **attrs)
    with pytest.raises(ShapeInferenceError, match="expected a float type"):
        make(NormalizeL2, param("i32", [2, 5]), axes([1]), **attrs)
    with pytest.raises(AttributeValidationError, match="eps_mode"):
        make(NormalizeL2, param("f32", [2, 5]), axes([1]), eps=1e-6, eps_mode="min")


@pytest.mark.openvino
@pytest.mark.parametrize("ax", [[1], [2, 3], [1, 2, 3], [-1]])
def test_normalize_l2_add_matches_openvino(ax: list[int]) -> None:
    import openvino.opset1 as ov1

    x = data()
    p = ov1.parameter(list(SHAPE), np.float32)
    want = ov_run(ov1.normalize_l2(p, ov1.constant(np.array(ax, np.int64)), 1e-3, "add"), [p], [x])
    assert_close(evaluate(make(NormalizeL2, param("f32", SHAPE), axes(ax), eps=1e-3, eps_mode="add"), [x]), want)


@pytest.mark.parametrize("ax", [[1], [2, 3]])
def test_normalize_l2_max_follows_the_specification(ax: list[int]) -> None:
    # OpenVINO's CPU plugin (2026.4) computes eps_mode="max" like "add"; the specification, which
    # the reference follows, divides by sqrt(max(sum(x**2), eps)).
    x = data() * np.float32(0.02)
    (y,) = evaluate(make(NormalizeL2, param("f32", SHAPE), axes(ax), eps=1e-3, eps_mode="max"), [x])
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt(np.maximum(np.sum(x64 * x64, axis=tuple(ax), keepdims=True), 1e-3))
    np.testing.assert_allclose(y, want, rtol=1e-5)


@pytest.mark.openvino
def test_normalize_l2_empty_axes_matches_openvino() -> None:
    import openvino as ov
    import openvino.opset1 as ov1

    x = np.array([[0, 3, -2], [1e-3, 0, 5]], np.float32)
    p = ov1.parameter([2, 3], np.float32)
    empty = ov.op.Constant(ov.Type.i64, ov.Shape([0]), [])
    want = ov_run(ov1.normalize_l2(p, empty, 1e-3, "max"), [p], [x])
    got = evaluate(
        make(NormalizeL2, param("f32", [2, 3]), const(np.zeros(0, np.int64)), eps=1e-3, eps_mode="max"), [x]
    )
    assert_close(got, want)
    np.testing.assert_array_equal(got[0], [[0, 1, 1], [1, 0, 1]])


@pytest.mark.openvino
def test_normalize_l2_ir_loads_in_openvino() -> None:
    check_ir_in_openvino(make(NormalizeL2, param("f32", SHAPE), axes([1]), eps=1e-3, eps_mode="add"), [data()])


# --- LRN ---------------------------------------------------------------------------------
def test_lrn_shapes_and_errors() -> None:
    attrs = {"alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": 5}
    n = make(LRN, param("f32", [None, 5, None, 6]), axes([1]), **attrs)
    assert n.output_specs[0].shape == PartialShape([None, 5, None, 6])
    n = make(LRN, param("f32", PartialShape.dynamic()), axes([1]), **attrs)
    assert n.output_specs[0].shape.rank is None
    with pytest.raises(ShapeInferenceError, match=r"input 1 \(axes\) value 4 is out of range"):
        make(LRN, param("f32", SHAPE), axes([4]), **attrs)
    with pytest.raises(ShapeInferenceError, match="size is 0, expected a positive integer"):
        make(LRN, param("f32", SHAPE), axes([1]), **{**attrs, "size": 0})
    with pytest.raises(AttributeValidationError, match="size"):
        make(LRN, param("f32", SHAPE), axes([1]), alpha=1e-4, beta=0.75, bias=1.0)


@pytest.mark.openvino
@pytest.mark.parametrize("ax", [[1], [2, 3]])
@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_lrn_matches_openvino(ax: list[int], size: int) -> None:
    import openvino.opset1 as ov1

    x = data()
    p = ov1.parameter(list(SHAPE), np.float32)
    # An integral bias: the CPU plugin (2026.4) truncates a fractional one.
    want = ov_run(ov1.lrn(p, ov1.constant(np.array(ax, np.int64)), 0.3, 0.75, 2.0, size), [p], [x])
    got = evaluate(make(LRN, param("f32", SHAPE), axes(ax), alpha=0.3, beta=0.75, bias=2.0, size=size), [x])
    assert_close(got, want)


def test_lrn_fractional_bias_follows_the_specification() -> None:
    x = data()
    (y,) = evaluate(make(LRN, param("f32", SHAPE), axes([1]), alpha=0.3, beta=0.75, bias=1.5, size=3), [x])
    x64 = x.astype(np.float64)
    sq = np.pad(x64 * x64, ((0, 0), (1, 1), (0, 0), (0, 0)))
    window = sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:]
    np.testing.assert_allclose(y, x64 / (1.5 + 0.1 * window) ** 0.75, rtol=1e-5)


@pytest.mark.openvino
def test_lrn_ir_loads_in_openvino() -> None:
    check_ir_in_openvino(make(LRN, param("f32", SHAPE), axes([1]), alpha=0.3, beta=0.75, bias=2.0, size=3), [data()])


# --- GRN ---------------------------------------------------------------------------------
def test_grn_shapes_and_errors() -> None:
    assert make(GRN, param("f32", [None, 3, None]), bias=1e-5).output_specs[0].shape == PartialShape([None, 3, None])
    assert make(GRN, param("f32", PartialShape.dynamic()), bias=1e-5).output_specs[0].shape.rank is None
    with pytest.raises(ShapeInferenceError, match=r"input 0 \(data\) has rank 5, expected 2, 3 or 4"):
        make(GRN, param("f32", [1, 2, 3, 4, 5]), bias=1e-5)


@pytest.mark.openvino
def test_grn_matches_openvino() -> None:
    import openvino.opset1 as ov1

    x = data()
    p = ov1.parameter(list(SHAPE), np.float32)
    want = ov_run(ov1.grn(p, 0.5), [p], [x])
    n = make(GRN, param("f32", SHAPE), bias=0.5)
    assert_close(evaluate(n, [x]), want)
    check_ir_in_openvino(n, [x])


# --- Softmax / LogSoftmax ----------------------------------------------------------------
@pytest.mark.parametrize("op", [Softmax, LogSoftmax])
def test_softmax_shapes_and_errors(op: Any) -> None:
    assert make(op, param("f32", [None, 4])).attrs.model_dump() == {"axis": 1}  # OpenVINO's default
    assert make(op, param("f32", [None, 4]), axis=-2).output_specs[0].shape == PartialShape([None, 4])
    assert make(op, param("f32", PartialShape.dynamic()), axis=7).output_specs[0].shape.rank is None
    with pytest.raises(ShapeInferenceError, match=r"axis 2 is out of range \[-2, 1\] for rank 2"):
        make(op, param("f32", [3, 4]), axis=2)
    with pytest.raises(ShapeInferenceError, match="expected a float type"):
        make(op, param("i32", [3, 4]))


@pytest.mark.openvino
@pytest.mark.parametrize("axis", [0, 1, -1, 3])
def test_softmax_matches_openvino(axis: int) -> None:
    import openvino.opset5 as ov5
    import openvino.opset8 as ov8

    x = data() * np.float32(10)
    p = ov8.parameter(list(SHAPE), np.float32)
    assert_close(
        evaluate(make(Softmax, param("f32", SHAPE), axis=axis), [x]), ov_run(ov8.softmax(p, axis), [p], [x])
    )
    assert_close(
        evaluate(make(LogSoftmax, param("f32", SHAPE), axis=axis), [x]), ov_run(ov5.log_softmax(p, axis), [p], [x])
    )


@pytest.mark.openvino
def test_softmax_ir_loads_in_openvino() -> None:
    check_ir_in_openvino(make(Softmax, param("f32", SHAPE), axis=-1), [data()])
    check_ir_in_openvino(make(LogSoftmax, param("f32", SHAPE), axis=2), [data()])


def test_softmax_is_stable_for_large_inputs() -> None:
    x = np.array([[1000.0, 1000.0], [-1000.0, 0.0]], np.float32)
    (y,) = evaluate(make(Softmax, param("f32", [2, 2])), [x])
    np.testing.assert_allclose(y, [[0.5, 0.5], [0.0, 1.0]])
    (y,) = evaluate(make(LogSoftmax, param("f32", [2, 2])), [x])
    np.testing.assert_allclose(y, [[-np.log(2), -np.log(2)], [-1000.0, 0.0]], rtol=1e-6)


def _extra_inputs(op: Any, dtype: Any) -> list[Any]:
    if op is BatchNormInference:
        return [const(np.full(5, v, dtype)) for v in (1.5, 0.5, 0.25, 2.0)]
    if op in (GRN, Softmax, LogSoftmax):
        return []
    return [axes([2, 3] if op is MVN else [1])]


NORM_ATTRS: dict[Any, dict[str, Any]] = {
    BatchNormInference: {"epsilon": 1e-3},
    MVN: {"normalize_variance": True, "eps": 1e-3, "eps_mode": "inside_sqrt"},
    NormalizeL2: {"eps": 1e-3, "eps_mode": "max"},
    LRN: {"alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": 3},
    GRN: {"bias": 1e-3},
    Softmax: {},
    LogSoftmax: {},
}


@pytest.mark.parametrize("t", ["f16", "bf16", "f64"])
@pytest.mark.parametrize("op", list(NORM_ATTRS), ids=lambda o: o.type_name)
def test_norm_ops_keep_element_type(op: Any, t: str) -> None:
    n = make(op, param(t, SHAPE), *_extra_inputs(op, param(t, [1]).output_specs[0].type.np), **NORM_ATTRS[op])
    x = data().astype(n.output_specs[0].type.np)
    (y,) = evaluate(n, [x])
    (y32,) = evaluate(
        make(op, param("f32", SHAPE), *_extra_inputs(op, np.float32), **NORM_ATTRS[op]), [x.astype(np.float32)]
    )
    # Half types compute in float32 and round once at the end.
    tol = {"f16": 2e-3, "bf16": 1e-2, "f64": 1e-6}[t]
    np.testing.assert_allclose(y.astype(np.float32), y32, rtol=tol, atol=tol)
