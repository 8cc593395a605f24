"""MaxPool-8, AvgPool-1, AdaptiveAvgPool-8 and AdaptiveMaxPool-8: shape inference (static,
dynamic, auto_pad, rounding), errors, and the NumPy reference against OpenVINO."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from opforge.element_type import Type
from opforge.errors import AttributeValidationError, ShapeInferenceError
from opforge.opset import ops_in_module
from opforge.opset.adaptive_avg_pool import AdaptiveAvgPool
from opforge.opset.adaptive_max_pool import AdaptiveMaxPool
from opforge.opset.avg_pool import AvgPool
from opforge.opset.max_pool import MaxPool
from opforge.shape import PartialShape

from .oracle import assert_close, check_ir_in_openvino, const, evaluate, make, ov_run, param, rng


@pytest.mark.parametrize(
    ("module", "type_name", "version"),
    [
        ("max_pool", "MaxPool", "opset8"),
        ("avg_pool", "AvgPool", "opset1"),
        ("adaptive_avg_pool", "AdaptiveAvgPool", "opset8"),
        ("adaptive_max_pool", "AdaptiveMaxPool", "opset8"),
    ],
)
def test_module_defines_one_op(module: str, type_name: str, version: str) -> None:
    assert [(o.type_name, o.version) for o in ops_in_module(module)] == [(type_name, version)]


INCLUDE_PAD: dict[str, Any] = {"exclude-pad": False}


def max_pool(data: Any, t: str = "f32", **attrs: Any) -> Any:
    n = len(attrs["kernel"])
    attrs.setdefault("strides", [1] * n)
    attrs.setdefault("dilations", [1] * n)
    attrs.setdefault("pads_begin", [0] * n)
    attrs.setdefault("pads_end", [0] * n)
    return make(MaxPool, param(t, data), **attrs)


def avg_pool(data: Any, t: str = "f32", **attrs: Any) -> Any:
    n = len(attrs["kernel"])
    attrs.setdefault("strides", [1] * n)
    attrs.setdefault("pads_begin", [0] * n)
    attrs.setdefault("pads_end", [0] * n)
    attrs.setdefault("exclude-pad", True)
    return make(AvgPool, param(t, data), **attrs)


# --- shape inference ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rounding", "auto_pad", "out"),
    [
        ("floor", "explicit", [2, 3, 3, 3]),
        ("ceil", "explicit", [2, 3, 4, 4]),
        ("floor", "same_upper", [2, 3, 4, 3]),
        ("floor", "same_lower", [2, 3, 4, 3]),
        ("floor", "valid", [2, 3, 3, 3]),
        ("ceil", "valid", [2, 3, 3, 3]),
    ],
)
def test_pool_shapes(rounding: str, auto_pad: str, out: list[int]) -> None:
    attrs: dict[str, Any] = {
        "kernel": [3, 2],
        "strides": [2, 3],
        "pads_begin": [1, 0],
        "pads_end": [0, 1],
        "rounding_type": rounding,
        "auto_pad": auto_pad,
    }
    m = max_pool([2, 3, 7, 8], **attrs)
    assert m.output_specs[0].shape == PartialShape(out)
    assert m.output_specs[1].shape == PartialShape(out)
    assert m.output_specs[1].type is Type.i64
    assert avg_pool([2, 3, 7, 8], **attrs).output_specs[0].shape == PartialShape(out)


def test_pool_same_with_ceil_rounding() -> None:
    # OpenVINO pads for "same", then rounds the window count up: 5 elements, stride 3 -> 3.
    attrs: dict[str, Any] = {"kernel": [1], "strides": [3], "rounding_type": "ceil", "auto_pad": "same_upper"}
    assert max_pool([1, 1, 5], **attrs).output_specs[0].shape == PartialShape([1, 1, 3])


def test_max_pool_dilations_and_dynamic() -> None:
    m = max_pool(
        [1, 2, 9], kernel=[3], strides=[2], dilations=[2], pads_begin=[1], pads_end=[2], rounding_type="ceil"
    )
    assert m.output_specs[0].shape == PartialShape([1, 2, 5])
    m = max_pool([None, 3, None, 8], kernel=[3, 3], index_element_type="i32")
    assert m.output_specs[0].shape == PartialShape([None, 3, None, 6])
    assert m.output_specs[1].type is Type.i32
    m = max_pool(PartialShape.dynamic(), kernel=[3, 3])
    assert m.output_specs[0].shape == PartialShape.dynamic(4)
    m = max_pool([1, 3, None, 8], kernel=[3, 3], strides=[2, 2], auto_pad="same_upper")
    assert m.output_specs[0].shape == PartialShape([1, 3, None, 4])
    assert avg_pool([None, None, None], kernel=[2]).output_specs[0].shape == PartialShape([None, None, None])
    assert avg_pool(PartialShape.dynamic(), kernel=[2, 2, 2]).output_specs[0].shape == PartialShape.dynamic(5)


@pytest.mark.parametrize(
    ("data", "attrs", "match"),
    [
        ([1, 3], {"kernel": [2]}, r"input 0 \(data\) has rank 2, expected 3, 4 or 5"),
        ([1, 3, 8, 8], {"kernel": [2]}, r"attribute 'kernel' has 1 values \[2\], expected 2 for 2-D pooling"),
        (
            [1, 3, 8, 8],
            {"kernel": [2, 2], "strides": [1, 0]},
            r"attribute 'strides' is \[1, 0\], expected positive",
        ),
        ([1, 3, 2, 8], {"kernel": [3, 2]}, "smaller than the dilated kernel size 3"),
        ([1, 3, 8, 8], {"kernel": [2, 2], "axis": 4}, r"axis 4 is out of range \[-4, 3\]"),
        (
            [1, 3, 8, 8],
            {"kernel": [2, 2], "index_element_type": "f32"},
            "index_element_type is f32, expected i32 or i64",
        ),
        ([1, 3, 8, 8], {"kernel": [2, 2], "pads_begin": [-1, 0]}, "must not be negative"),
    ],
)
def test_max_pool_errors(data: list[int], attrs: dict[str, Any], match: str) -> None:
    with pytest.raises(ShapeInferenceError, match=match):
        max_pool(data, **attrs)


def test_avg_pool_errors() -> None:
    with pytest.raises(ShapeInferenceError, match="fits entirely in the padding"):
        avg_pool([1, 1, 5, 5], kernel=[2, 2], pads_begin=[2, 0], pads_end=[0, 0])
    # Without exclude-pad a window made of padding is fine (it averages zeros).
    n = avg_pool([1, 1, 5, 5], kernel=[2, 2], pads_begin=[2, 0], pads_end=[0, 0], **INCLUDE_PAD)
    assert n.output_specs[0].shape == PartialShape([1, 1, 6, 4])
    with pytest.raises(ShapeInferenceError, match=r"input 0 \(data\) has element type bool"):
        avg_pool([1, 1, 5, 5], "boolean", kernel=[2, 2])
    with pytest.raises(AttributeValidationError, match="rounding_type"):
        avg_pool([1, 1, 5, 5], kernel=[2, 2], rounding_type="round")


def test_avg_pool_exclude_pad_spelling() -> None:
    a = avg_pool([1, 1, 4, 4], kernel=[2, 2], **INCLUDE_PAD).attrs
    b = make(
        AvgPool,
        param("f32", [1, 1, 4, 4]),
        kernel=[2, 2],
        strides=[1, 1],
        pads_begin=[0, 0],
        pads_end=[0, 0],
        exclude_pad=False,
    ).attrs
    assert a == b
    ir = AvgPool.attrs_to_ir(a)
    assert ir["exclude-pad"] == "false" and "exclude_pad" not in ir
    assert AvgPool.attrs_from_ir("n", ir) == a


def test_adaptive_pool_shapes_and_errors() -> None:
    for op in (AdaptiveAvgPool, AdaptiveMaxPool):
        n = make(op, param("f32", [2, 3, 7, 9]), const(np.array([3, 4], np.int64)))
        assert n.output_specs[0].shape == PartialShape([2, 3, 3, 4])
        n = make(op, param("f32", [None, 3, None, 9]), const(np.array([3, 4], np.int32)))
        assert n.output_specs[0].shape == PartialShape([None, 3, 3, 4])
        n = make(op, param("f32", [2, 3, 7, 9]), param("i64", [2]))
        assert n.output_specs[0].shape == PartialShape([2, 3, None, None])
        n = make(op, param("f32", PartialShape.dynamic()), const(np.array([5], np.int64)))
        assert n.output_specs[0].shape == PartialShape([None, None, 5])
        n = make(op, param("f32", PartialShape.dynamic()), param("i64", PartialShape.dynamic()))
        assert n.output_specs[0].shape.rank is None
        with pytest.raises(ShapeInferenceError, match=r"input 1 \(output_shape\) has 3 elements, expected 2"):
            make(op, param("f32", [2, 3, 7, 9]), const(np.array([3, 4, 5], np.int64)))
        with pytest.raises(ShapeInferenceError, match=r"input 0 \(data\) has rank 2, expected 3, 4 or 5"):
            make(op, param("f32", [2, 3]), const(np.array([3], np.int64)))
        with pytest.raises(ShapeInferenceError, match=r"input 1 \(output_shape\) has element type float32"):
            make(op, param("f32", [2, 3, 4]), const(np.array([3.0], np.float32)))
    n = make(AdaptiveMaxPool, param("f32", [2, 3, 7]), const(np.array([3])), index_element_type="i32")
    assert [s.type for s in n.output_specs] == [Type.f32, Type.i32]


# --- evaluation ------------------------------------------------------------------------------
PoolCase = tuple[tuple[int, ...], dict[str, Any]]
MAX_CASES: list[PoolCase] = [
    *[
        (
            (2, 3, 7, 8),
            {
                "kernel": [3, 2],
                "strides": [2, 2],
                "dilations": [1, 2],
                "pads_begin": [1, 0],
                "pads_end": [1, 1],
                "rounding_type": "ceil",
                "axis": ax,
                "index_element_type": "i32",
            },
        )
        for ax in (0, 1, 2, 3, -2)
    ],
    *[
        (
            (2, 3, 7, 8),
            {
                "kernel": [3, 2],
                "strides": [2, 3],
                "dilations": [1, 1],
                "pads_begin": [0, 0],
                "pads_end": [0, 0],
                "rounding_type": rt,
                "auto_pad": ap,
            },
        )
        for ap in ("same_upper", "same_lower", "valid")
        for rt in ("floor", "ceil")
    ],
    (
        (1, 2, 9),
        {
            "kernel": [3],
            "strides": [2],
            "dilations": [2],
            "pads_begin": [1],
            "pads_end": [2],
            "rounding_type": "ceil",
        },
    ),
    (
        (1, 2, 5, 6, 7),
        {
            "kernel": [2, 2, 3],
            "strides": [2, 1, 2],
            "dilations": [1, 2, 1],
            "pads_begin": [1, 0, 1],
            "pads_end": [1, 1, 1],
            "rounding_type": "ceil",
            "axis": 2,
        },
    ),
    # Windows entirely in the padding give the lowest value and index 0.
    (
        (1, 1, 5, 5),
        {
            "kernel": [2, 2],
            "strides": [3, 3],
            "dilations": [1, 1],
            "pads_begin": [2, 2],
            "pads_end": [2, 2],
            "rounding_type": "ceil",
        },
    ),
]


@pytest.mark.openvino
@pytest.mark.parametrize(("shape", "attrs"), MAX_CASES)
def test_max_pool_matches_openvino(shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    import openvino.opset8 as ov8

    x = rng().standard_normal(shape).astype(np.float32)
    p = ov8.parameter(list(shape), np.float32)
    node = ov8.max_pool(
        p,
        attrs["strides"],
        attrs["dilations"],
        attrs["pads_begin"],
        attrs["pads_end"],
        attrs["kernel"],
        attrs.get("rounding_type", "floor"),
        attrs.get("auto_pad", "explicit"),
        attrs.get("index_element_type", "i64"),
        attrs.get("axis", 0),
    )
    want = ov_run(node, [p], [x])
    n = make(MaxPool, param("f32", shape), **attrs)
    assert n.output_specs[0].shape == PartialShape(want[0].shape)
    assert_close(evaluate(n, [x]), want)


_AVG_GEOMETRIES: list[PoolCase] = [
    ((1, 2, 9), {"kernel": [3], "strides": [2], "pads_begin": [1], "pads_end": [2], "rounding_type": "ceil"}),
    (
        (1, 2, 5, 6, 7),
        {
            "kernel": [2, 2, 3],
            "strides": [2, 1, 2],
            "pads_begin": [1, 0, 1],
            "pads_end": [1, 1, 1],
            "rounding_type": "ceil",
        },
    ),
    # The last window reaches past pads_end: OpenVINO does not count those positions.
    (
        (1, 1, 5, 5),
        {
            "kernel": [2, 2],
            "strides": [3, 3],
            "pads_begin": [1, 1],
            "pads_end": [1, 1],
            "rounding_type": "ceil",
        },
    ),
    ((2, 3, 8, 8), {"kernel": [3, 3], "strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1]}),
]
AVG_CASES: list[PoolCase] = [
    *[
        (
            (2, 3, 7, 8),
            {
                "kernel": [3, 2],
                "strides": [2, 3],
                "pads_begin": [0, 0],
                "pads_end": [0, 0],
                "rounding_type": rt,
                "auto_pad": ap,
                "exclude-pad": ex,
            },
        )
        for ap in ("same_upper", "same_lower", "valid")
        for rt in ("floor", "ceil")
        for ex in (True, False)
    ],
    *[(shape, {**attrs, "exclude-pad": ex}) for ex in (True, False) for shape, attrs in _AVG_GEOMETRIES],
]


@pytest.mark.openvino
@pytest.mark.parametrize(("shape", "attrs"), AVG_CASES)
def test_avg_pool_matches_openvino(shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    import openvino.opset1 as ov1

    x = rng().standard_normal(shape).astype(np.float32)
    p = ov1.parameter(list(shape), np.float32)
    node = ov1.avg_pool(
        p,
        attrs["strides"],
        attrs["pads_begin"],
        attrs["pads_end"],
        attrs["kernel"],
        attrs["exclude-pad"],
        attrs.get("rounding_type", "floor"),
        attrs.get("auto_pad", "explicit"),
    )
    want = ov_run(node, [p], [x])
    n = make(AvgPool, param("f32", shape), **attrs)
    assert n.output_specs[0].shape == PartialShape(want[0].shape)
    assert_close(evaluate(n, [x]), want)


def test_avg_pool_empty_window_divides_by_zero() -> None:
    # With exclude-pad a window past the input and the padding has nothing to count: NaN, as in
    # OpenVINO; without it the padded positions count and the average is 0.
    x = np.arange(1, 26, dtype=np.float32).reshape(1, 1, 5, 5)
    attrs: dict[str, Any] = {
        "kernel": [2, 2],
        "strides": [3, 3],
        "pads_begin": [1, 1],
        "pads_end": [1, 1],
        "rounding_type": "ceil",
    }
    (y,) = evaluate(avg_pool([1, 1, 5, 5], **attrs), [x])
    assert np.isnan(y[0, 0, 2, 2]) and y[0, 0, 0, 0] == 1.0
    (y,) = evaluate(avg_pool([1, 1, 5, 5], **attrs, **INCLUDE_PAD), [x])
    assert y[0, 0, 2, 2] == 0.0 and y[0, 0, 0, 0] == 0.25


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("shape", "out"),
    [
        ((2, 3, 7), [3]),
        ((2, 3, 7, 9), [3, 4]),
        ((1, 2, 5, 6, 7), [2, 3, 4]),
        ((1, 2, 5, 6), [7, 9]),
        ((1, 2, 5, 6), [1, 1]),
    ],
)
def test_adaptive_pools_match_openvino(shape: tuple[int, ...], out: list[int]) -> None:
    import openvino.opset8 as ov8

    x = rng().standard_normal(shape).astype(np.float32)
    p = ov8.parameter(list(shape), np.float32)
    os = np.array(out, np.int64)
    want_avg = ov_run(ov8.adaptive_avg_pool(p, ov8.constant(os)), [p], [x])
    # The CPU plugin computes indices in i32 only.
    want_max = ov_run(ov8.adaptive_max_pool(p, ov8.constant(os), "i32"), [p], [x])
    assert_close(evaluate(make(AdaptiveAvgPool, param("f32", shape), const(os)), [x]), want_avg)
    got = evaluate(make(AdaptiveMaxPool, param("f32", shape), const(os), index_element_type="i32"), [x])
    assert_close(got, want_max)


@pytest.mark.parametrize("t", ["f16", "bf16", "f64"])
def test_pools_keep_element_type(t: str) -> None:
    x32 = rng().standard_normal((1, 2, 6, 6)).astype(np.float32)
    n = max_pool([1, 2, 6, 6], t, kernel=[3, 3], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1])
    x = x32.astype(n.output_specs[0].type.np)
    values, indices = evaluate(n, [x])
    values32, indices32 = evaluate(
        max_pool([1, 2, 6, 6], kernel=[3, 3], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1]),
        [x.astype(np.float32)],
    )
    np.testing.assert_array_equal(values.astype(np.float32), values32)
    np.testing.assert_array_equal(indices, indices32)
    (avg,) = evaluate(avg_pool([1, 2, 6, 6], t, kernel=[3, 3], strides=[2, 2]), [x])
    assert avg.dtype == x.dtype
    for op in (AdaptiveAvgPool, AdaptiveMaxPool):
        evaluate(make(op, param(t, [1, 2, 6, 6]), const(np.array([4, 4]))), [x])


def test_max_pool_integers_pad_with_lowest_value() -> None:
    x = np.array([[[-5, -7, -3]]], dtype=np.int8)
    values, indices = evaluate(
        max_pool([1, 1, 3], "i8", kernel=[2], strides=[2], pads_begin=[1], pads_end=[1]), [x]
    )
    np.testing.assert_array_equal(values[0, 0], [-5, -3])
    np.testing.assert_array_equal(indices[0, 0], [0, 2])


@pytest.mark.openvino
@pytest.mark.parametrize(("shape", "attrs"), [MAX_CASES[1], MAX_CASES[6], MAX_CASES[-2]])
def test_max_pool_ir_loads_in_openvino(shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    x = rng().standard_normal(shape).astype(np.float32)
    check_ir_in_openvino(make(MaxPool, param("f32", shape), **attrs), [x])


@pytest.mark.openvino
@pytest.mark.parametrize(("shape", "attrs"), [AVG_CASES[0], AVG_CASES[5], AVG_CASES[-1]])
def test_avg_pool_ir_loads_in_openvino(shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    x = rng().standard_normal(shape).astype(np.float32)
    check_ir_in_openvino(make(AvgPool, param("f32", shape), **attrs), [x])


@pytest.mark.openvino
def test_adaptive_pools_ir_load_in_openvino() -> None:
    x = rng().standard_normal((1, 2, 7, 9)).astype(np.float32)
    os = const(np.array([3, 4], np.int64))
    check_ir_in_openvino(make(AdaptiveAvgPool, param("f32", [1, 2, 7, 9]), os), [x])
    check_ir_in_openvino(make(AdaptiveMaxPool, param("f32", [1, 2, 7, 9]), os, index_element_type="i32"), [x])
