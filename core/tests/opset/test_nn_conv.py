"""MatMul and the convolutions: shape inference (static, dynamic dimensions, dynamic rank,
auto_pad), errors, and the NumPy reference against OpenVINO."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from opforge.errors import ShapeInferenceError
from opforge.op import Op
from opforge.opset import ops_in_module
from opforge.opset.convolution import Convolution
from opforge.opset.convolution_backprop_data import ConvolutionBackpropData
from opforge.opset.group_convolution import GroupConvolution
from opforge.opset.group_convolution_backprop_data import GroupConvolutionBackpropData
from opforge.opset.mat_mul import MatMul
from opforge.shape import PartialShape

from .oracle import assert_close, check_ir_in_openvino, const, evaluate, make, ov_run, param, rng

CONV_OPS: dict[str, type[Op]] = {
    "convolution": Convolution,
    "group_convolution": GroupConvolution,
    "convolution_backprop_data": ConvolutionBackpropData,
    "group_convolution_backprop_data": GroupConvolutionBackpropData,
}


@pytest.mark.parametrize(
    ("module", "type_name", "version"),
    [
        ("mat_mul", "MatMul", "opset1"),
        ("convolution", "Convolution", "opset1"),
        ("group_convolution", "GroupConvolution", "opset1"),
        ("convolution_backprop_data", "ConvolutionBackpropData", "opset1"),
        ("group_convolution_backprop_data", "GroupConvolutionBackpropData", "opset1"),
    ],
)
def test_module_defines_one_op(module: str, type_name: str, version: str) -> None:
    assert [(o.type_name, o.version) for o in ops_in_module(module)] == [(type_name, version)]


# --- MatMul ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "ta", "tb", "out"),
    [
        ([3, 4], [4, 5], False, False, [3, 5]),
        ([4, 3], [4, 5], True, False, [3, 5]),
        ([3, 4], [5, 4], False, True, [3, 5]),
        ([2, 1, 3, 4], [5, 5, 4], False, True, [2, 5, 3, 5]),
        ([4], [4, 5], False, False, [5]),
        ([4], [4, 5], True, False, [5]),  # transpose is ignored for 1-D operands
        ([2, 3, 4], [4], False, False, [2, 3]),
        ([4], [4], False, False, []),
        ([None, 3, 4], [4, None], False, False, [None, 3, None]),
        ([None, None], [None, 7], False, False, [None, 7]),
        ([2, None, 4], [1, 4, 6], False, False, [2, None, 6]),
        ([None, 1, 3, 4], [7, 4, 2], False, False, [None, 7, 3, 2]),
    ],
)
def test_matmul_shape(a: list[Any], b: list[Any], ta: bool, tb: bool, out: list[Any]) -> None:
    n = make(MatMul, param("f32", a), param("f32", b), transpose_a=ta, transpose_b=tb)
    assert n.output_specs[0].shape == PartialShape(out)


def test_matmul_dynamic_rank() -> None:
    n = make(MatMul, param("f32", PartialShape.dynamic()), param("f32", [4, 5]))
    assert n.output_specs[0].shape.rank is None


def test_matmul_default_attributes() -> None:
    assert make(MatMul, param("f32", [2, 3]), param("f32", [3, 4])).attrs.model_dump() == {
        "transpose_a": False,
        "transpose_b": False,
    }


@pytest.mark.parametrize(
    ("a", "b", "ta", "types", "match"),
    [
        (
            [3, 4],
            [5, 6],
            False,
            ("f32", "f32"),
            r"inner dimensions differ: A \[3,4\] gives K=4, B \[5,6\] gives K=5",
        ),
        ([4, 3], [4, 5], False, ("f32", "f32"), "gives K=3"),
        ([3, 4], [4, 5], False, ("f32", "f16"), r"input 1 \(B\) has element type float16, expected float32"),
        ([], [4, 5], False, ("f32", "f32"), r"input 0 \(A\) is a scalar"),
        ([2, 3, 4], [3, 4, 5], False, ("f32", "f32"), "cannot be broadcast"),
        ([3, 4], [4, 5], False, ("boolean", "boolean"), "expected a numeric type"),
    ],
)
def test_matmul_errors(a: list[int], b: list[int], ta: bool, types: tuple[str, str], match: str) -> None:
    with pytest.raises(ShapeInferenceError, match=match):
        make(MatMul, param(types[0], a), param(types[1], b), transpose_a=ta)


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("a", "b", "ta", "tb"),
    [
        ((3, 4), (4, 5), False, False),
        ((4, 3), (5, 4), True, True),
        ((2, 1, 3, 4), (5, 5, 4), False, True),
        ((4,), (4, 5), True, False),
        ((2, 3, 4), (4,), False, False),
        ((4,), (4,), False, False),
        ((4,), (3, 4), True, True),
    ],
)
def test_matmul_matches_openvino(a: tuple[int, ...], b: tuple[int, ...], ta: bool, tb: bool) -> None:
    import openvino.opset1 as ov1

    g = rng()
    xa, xb = g.standard_normal(a).astype(np.float32), g.standard_normal(b).astype(np.float32)
    pa, pb = ov1.parameter(list(a), np.float32), ov1.parameter(list(b), np.float32)
    want = ov_run(ov1.matmul(pa, pb, ta, tb), [pa, pb], [xa, xb])
    got = evaluate(make(MatMul, param("f32", a), param("f32", b), transpose_a=ta, transpose_b=tb), [xa, xb])
    assert_close(got, want)


@pytest.mark.parametrize("t", ["f16", "bf16", "i32", "u8", "f64"])
def test_matmul_keeps_element_type(t: str) -> None:
    g = rng()
    n = make(MatMul, param(t, [2, 3]), param(t, [3, 4]))
    dt = n.output_specs[0].type.np
    xa, xb = (g.integers(0, 4, s).astype(dt) for s in ((2, 3), (3, 4)))
    (y,) = evaluate(n, [xa, xb])
    np.testing.assert_allclose(y.astype(np.float64), xa.astype(np.float64) @ xb.astype(np.float64))


def test_matmul_integer_overflow_wraps() -> None:
    a = np.array([[200, 100]], dtype=np.uint8)
    b = np.array([[2], [1]], dtype=np.uint8)
    (y,) = evaluate(make(MatMul, param("u8", [1, 2]), param("u8", [2, 1])), [a, b])
    assert y[0, 0] == (500 % 256)


# --- forward convolutions: shape inference ------------------------------------------------
def conv(data: Any, filters: Any, op: type[Op] = Convolution, **attrs: Any) -> PartialShape:
    n_spatial = len(attrs.get("strides", [])) or 2
    attrs.setdefault("strides", [1] * n_spatial)
    attrs.setdefault("dilations", [1] * n_spatial)
    attrs.setdefault("pads_begin", [0] * n_spatial)
    attrs.setdefault("pads_end", [0] * n_spatial)
    ins = [param("f32", data), param("f32", filters) if not isinstance(filters, np.ndarray) else const(filters)]
    if "output_shape" in attrs:
        os = attrs.pop("output_shape")
        ins.append(os if not isinstance(os, list) else const(np.array(os, dtype=np.int64)))
    return make(op, *ins, **attrs).output_specs[0].shape


def test_convolution_resnet_stem_shape() -> None:
    s = conv([1, 3, 224, 224], [64, 3, 7, 7], strides=[2, 2], pads_begin=[3, 3], pads_end=[3, 3])
    assert s == PartialShape([1, 64, 112, 112])


@pytest.mark.parametrize(
    ("auto_pad", "out"),
    [
        ("explicit", [2, 6, 4, 3]),
        ("same_upper", [2, 6, 5, 3]),
        ("same_lower", [2, 6, 5, 3]),
        ("valid", [2, 6, 4, 2]),
    ],
)
def test_convolution_auto_pad_shapes(auto_pad: str, out: list[int]) -> None:
    s = conv(
        [2, 4, 9, 8],
        [6, 4, 3, 2],
        strides=[2, 3],
        dilations=[1, 2],
        pads_begin=[1, 0],
        pads_end=[0, 1],
        auto_pad=auto_pad,
    )
    assert s == PartialShape(out)


def test_convolution_accepts_upper_case_auto_pad() -> None:
    # OpenVINO's Python API and older IR files spell it in capitals.
    n = make(
        Convolution,
        param("f32", [1, 1, 4]),
        param("f32", [1, 1, 3]),
        strides=[1],
        dilations=[1],
        pads_begin=[0],
        pads_end=[0],
        auto_pad="SAME_UPPER",
    )
    assert n.attrs.auto_pad == "same_upper"  # type: ignore[attr-defined]
    assert n.output_specs[0].shape == PartialShape([1, 1, 4])


@pytest.mark.parametrize(
    ("data", "filters", "auto_pad", "out"),
    [
        ([None, 4, None, 8], [6, 4, 3, 3], "explicit", [None, 6, None, 6]),
        ([1, 4, 9, 8], [None, 4, 3, 3], "explicit", [1, None, 7, 6]),
        ([1, 4, 9, 8], [6, 4, None, 3], "explicit", [1, 6, None, 6]),
        ([1, 4, 9, 8], [6, 4, None, None], "same_upper", [1, 6, 9, 8]),  # the kernel does not matter
        ([1, None, 9, 8], [6, 4, 3, 3], "valid", [1, 6, 7, 6]),
        ([1, 4, None, 8], [6, None, 3, 3], "same_lower", [1, 6, None, 8]),
    ],
)
def test_convolution_dynamic_dims(data: list[Any], filters: list[Any], auto_pad: str, out: list[Any]) -> None:
    assert conv(data, filters, auto_pad=auto_pad) == PartialShape(out)


def test_convolution_dynamic_rank() -> None:
    assert conv(PartialShape.dynamic(), [6, 4, 3, 3]) == PartialShape([None, 6, None, None])
    # With both ranks unknown the attributes still fix the number of spatial axes.
    s = conv(PartialShape.dynamic(), PartialShape.dynamic(), strides=[1, 1, 1])
    assert s == PartialShape.dynamic(5)
    assert conv([1, 4, 9, 9], PartialShape.dynamic()) == PartialShape([1, None, None, None])


@pytest.mark.parametrize(
    ("data", "filters", "attrs", "match"),
    [
        ([1, 4, 9, 9], [6, 4, 3], {}, r"input 1 \(filters\) has rank 3, expected 4 for 2-D convolution"),
        (
            [1, 4, 9, 9],
            [6, 5, 3, 3],
            {},
            r"input 0 \(data\) has 4 channels \(dimension 1\), but input 1 "
            r"\(filters\) expects 5",
        ),
        ([1, 4], [6, 4], {}, r"input 0 \(data\) has rank 2, expected 3, 4 or 5"),
        ([1, 4, 9, 9], [6, 4, 3, 3], {"strides": [1, 1, 1]}, r"attribute 'strides' has 3 values"),
        (
            [1, 4, 9, 9],
            [6, 4, 3, 3],
            {"pads_begin": [0]},
            r"attribute 'pads_begin' has 1 values \[0\], expected 2",
        ),
        (
            [1, 4, 9, 9],
            [6, 4, 3, 3],
            {"strides": [0, 1]},
            r"attribute 'strides' is \[0, 1\], expected positive",
        ),
        (
            [1, 4, 2, 9],
            [6, 4, 3, 3],
            {},
            r"spatial axis 0: the padded data size 2 \+ 0 \+ 0 is smaller than the "
            r"dilated kernel size 3",
        ),
        ([1, 4, 5, 9], [6, 4, 3, 3], {"dilations": [3, 1]}, "dilated kernel size 7"),
    ],
)
def test_convolution_errors(data: list[int], filters: list[int], attrs: dict[str, Any], match: str) -> None:
    with pytest.raises(ShapeInferenceError, match=match):
        conv(data, filters, **attrs)


def test_convolution_type_errors() -> None:
    with pytest.raises(
        ShapeInferenceError, match=r"input 1 \(filters\) has element type float16, expected float32"
    ):
        make(
            Convolution,
            param("f32", [1, 1, 4]),
            param("f16", [1, 1, 3]),
            strides=[1],
            dilations=[1],
            pads_begin=[0],
            pads_end=[0],
        )
    with pytest.raises(ShapeInferenceError, match="expected a numeric type"):
        make(
            Convolution,
            param("boolean", [1, 1, 4]),
            param("boolean", [1, 1, 3]),
            strides=[1],
            dilations=[1],
            pads_begin=[0],
            pads_end=[0],
        )


def test_group_convolution_shapes_and_errors() -> None:
    assert conv([2, 6, 9, 9], [3, 4, 2, 3, 3], GroupConvolution) == PartialShape([2, 12, 7, 7])
    assert conv([2, None, 9, 9], [3, 4, 2, 3, 3], GroupConvolution) == PartialShape([2, 12, 7, 7])
    assert conv([2, 6, 9, 9], [None, 4, 2, 3, 3], GroupConvolution) == PartialShape([2, None, 7, 7])
    assert conv(PartialShape.dynamic(), [3, 4, 2, 3, 3], GroupConvolution) == PartialShape(
        [None, 12, None, None]
    )
    with pytest.raises(
        ShapeInferenceError,
        match=r"input 0 \(data\) has 6 channels, but filters expect 2 groups x "
        r"2 channels = 4",
    ):
        conv([2, 6, 9, 9], [2, 4, 2, 3, 3], GroupConvolution)
    with pytest.raises(
        ShapeInferenceError,
        match=r"input 1 \(filters\) has rank 4, expected 5 for 2-D group "
        r"convolution",
    ):
        conv([2, 6, 9, 9], [4, 2, 3, 3], GroupConvolution)


# --- backprop: shape inference --------------------------------------------------------------
@pytest.mark.parametrize(
    ("attrs", "out"),
    [
        ({"strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1]}, [1, 3, 9, 9]),
        (
            {"strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1], "output_padding": [1, 0]},
            [1, 3, 10, 9],
        ),
        ({"strides": [2, 1], "dilations": [1, 2], "pads_begin": [0, 2], "pads_end": [1, 0]}, [1, 3, 10, 7]),
        (
            {"strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1], "auto_pad": "same_upper"},
            [1, 3, 11, 11],
        ),
        (
            {
                "strides": [2, 2],
                "pads_begin": [1, 1],
                "pads_end": [1, 1],
                "auto_pad": "valid",
                "output_padding": [1, 1],
            },
            [1, 3, 12, 12],
        ),
        ({"strides": [2, 2], "output_shape": [10, 12], "auto_pad": "same_lower"}, [1, 3, 10, 12]),
        ({"strides": [2, 2], "output_shape": [10, 12]}, [1, 3, 10, 12]),
    ],
)
def test_backprop_shapes(attrs: dict[str, Any], out: list[int]) -> None:
    assert conv([1, 2, 5, 5], [2, 3, 3, 3], ConvolutionBackpropData, **attrs) == PartialShape(out)


def test_backprop_dynamic() -> None:
    cbd = ConvolutionBackpropData
    assert conv([None, 2, None, 5], [2, 3, 3, 3], cbd, strides=[2, 2]) == PartialShape([None, 3, None, 11])
    assert conv(PartialShape.dynamic(), [2, 3, 3, 3], cbd, strides=[2, 2]) == PartialShape(
        [None, 3, None, None]
    )
    # An output_shape that is not a constant leaves the spatial sizes unknown.
    s = conv([1, 2, 5, 5], [2, 3, 3, 3], cbd, strides=[2, 2], output_shape=param("i64", [2]))
    assert s == PartialShape([1, 3, None, None])
    s = conv([1, 2, 5, 5, 5], [2, 3, 3, 3, 3], cbd, strides=[2, 2, 2], output_shape=[9, 10, 11])
    assert s == PartialShape([1, 3, 9, 10, 11])
    s = conv([1, 6, 5, 5], [3, 2, 4, 3, 3], GroupConvolutionBackpropData, strides=[1, 1])
    assert s == PartialShape([1, 12, 7, 7])
    s = conv([1, 6, 5, 5], [None, 2, 4, 3, 3], GroupConvolutionBackpropData, strides=[1, 1])
    assert s == PartialShape([1, None, 7, 7])


@pytest.mark.parametrize(
    ("op", "filters", "attrs", "match"),
    [
        (
            ConvolutionBackpropData,
            [3, 3, 3, 3],
            {},
            r"input 0 \(data\) has 2 channels \(dimension 1\), but input 1 "
            r"\(filters\) expects 3 \(dimension 0\)",
        ),
        (
            ConvolutionBackpropData,
            [2, 3, 3],
            {},
            r"input 1 \(filters\) has rank 3, expected 4 for 2-D backprop",
        ),
        (
            ConvolutionBackpropData,
            [2, 3, 3, 3],
            {"output_shape": [4, 4, 4]},
            r"input 2 \(output_shape\) has shape \[3\], expected \[2\]",
        ),
        (
            ConvolutionBackpropData,
            [2, 3, 3, 3],
            {"output_padding": [1]},
            "attribute 'output_padding' has 1 values",
        ),
        (ConvolutionBackpropData, [2, 3, 3, 3], {"pads_begin": [4, 4], "pads_end": [4, 4]}, "is negative"),
        (
            GroupConvolutionBackpropData,
            [3, 1, 2, 3, 3],
            {},
            r"has 2 channels, but filters expect 3 groups x 1",
        ),
    ],
)
def test_backprop_errors(op: type[Op], filters: list[int], attrs: dict[str, Any], match: str) -> None:
    with pytest.raises(ShapeInferenceError, match=match):
        conv([1, 2, 5, 5], filters, op, **attrs)


def test_backprop_output_shape_must_be_integers() -> None:
    with pytest.raises(ShapeInferenceError, match=r"input 2 \(output_shape\) has element type float32"):
        conv(
            [1, 2, 5, 5],
            [2, 3, 3, 3],
            ConvolutionBackpropData,
            output_shape=const(np.array([4.0, 4.0], np.float32)),
        )


# --- evaluation against OpenVINO ---------------------------------------------------------
ConvCase = tuple[str, tuple[int, ...], tuple[int, ...], dict[str, Any]]
BackpropCase = tuple[str, tuple[int, ...], tuple[int, ...], dict[str, Any], list[int] | None]
FORWARD_CASES: list[ConvCase] = [
    (
        "convolution",
        (1, 4, 11),
        (6, 4, 3),
        {"strides": [2], "pads_begin": [1], "pads_end": [1], "dilations": [2]},
    ),
    (
        "convolution",
        (1, 4, 9, 9),
        (6, 4, 3, 3),
        {"strides": [2, 1], "pads_begin": [1, 0], "pads_end": [0, 2], "dilations": [1, 2]},
    ),
    (
        "convolution",
        (1, 2, 5, 6, 7),
        (3, 2, 3, 2, 3),
        {"strides": [1, 2, 1], "pads_begin": [1, 0, 1], "pads_end": [0, 1, 1], "dilations": [1, 1, 2]},
    ),
    *[
        (
            "convolution",
            (2, 4, 9, 8),
            (6, 4, 3, 2),
            {
                "strides": [2, 3],
                "pads_begin": [1, 0],
                "pads_end": [0, 2],
                "dilations": [1, 2],
                "auto_pad": ap,
            },
        )
        for ap in ("same_upper", "same_lower", "valid")
    ],
    (
        "group_convolution",
        (2, 6, 9, 9),
        (3, 4, 2, 3, 3),
        {"strides": [2, 1], "pads_begin": [1, 0], "pads_end": [0, 2], "dilations": [1, 2]},
    ),
    (
        "group_convolution",
        (2, 6, 9, 9),
        (6, 1, 1, 3, 3),
        {
            "strides": [1, 1],
            "pads_begin": [1, 1],
            "pads_end": [1, 1],
            "dilations": [1, 1],
            "auto_pad": "same_lower",
        },
    ),
    (
        "group_convolution",
        (1, 4, 7),
        (2, 3, 2, 2),
        {"strides": [3], "pads_begin": [0], "pads_end": [0], "dilations": [1], "auto_pad": "same_upper"},
    ),
]
BACKPROP_CASES: list[BackpropCase] = [
    (
        "convolution_backprop_data",
        (1, 4, 5, 6),
        (4, 3, 3, 3),
        {
            "strides": [2, 1],
            "pads_begin": [1, 0],
            "pads_end": [0, 2],
            "dilations": [1, 2],
            "output_padding": [1, 0],
        },
        None,
    ),
    (
        "convolution_backprop_data",
        (1, 4, 7),
        (4, 2, 3),
        {"strides": [3], "pads_begin": [0], "pads_end": [0], "dilations": [2]},
        None,
    ),
    *[
        (
            "convolution_backprop_data",
            (1, 4, 5, 6),
            (4, 3, 3, 3),
            {
                "strides": [2, 2],
                "pads_begin": [1, 0],
                "pads_end": [0, 1],
                "dilations": [1, 1],
                "auto_pad": ap,
                **extra,
            },
            os,
        )
        for ap in ("explicit", "same_upper", "same_lower", "valid")
        for extra, os in (({}, [10, 12]), ({"output_padding": [1, 1]}, [9, 11]), ({}, [13, 14]), ({}, None))
    ],
    (
        "convolution_backprop_data",
        (1, 2, 3, 4, 3),
        (2, 2, 2, 3, 2),
        {"strides": [1, 2, 2], "pads_begin": [0, 1, 0], "pads_end": [1, 0, 0], "dilations": [1, 1, 2]},
        None,
    ),
    (
        "group_convolution_backprop_data",
        (2, 6, 5, 6),
        (3, 2, 2, 3, 3),
        {"strides": [2, 1], "pads_begin": [1, 0], "pads_end": [0, 2], "dilations": [1, 2]},
        None,
    ),
    (
        "group_convolution_backprop_data",
        (2, 6, 5, 6),
        (3, 2, 2, 3, 3),
        {
            "strides": [2, 2],
            "pads_begin": [0, 0],
            "pads_end": [0, 0],
            "dilations": [1, 1],
            "auto_pad": "same_upper",
        },
        [10, 11],
    ),
]


def _ov_conv(kind: str, p: Any, w: np.ndarray, attrs: dict[str, Any], output_shape: list[int] | None) -> Any:
    import openvino.opset1 as ov1

    fn = getattr(ov1, kind)
    if "backprop" in kind:
        os = None if output_shape is None else ov1.constant(np.array(output_shape, np.int64))
        return fn(p, ov1.constant(w), output_shape=os, **attrs)
    return fn(p, ov1.constant(w), **attrs)


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("kind", "xs", "ws", "attrs", "output_shape"),
    [*[(*c, None) for c in FORWARD_CASES], *BACKPROP_CASES],
)
def test_convolutions_match_openvino(
    kind: str, xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any], output_shape: list[int] | None
) -> None:
    import openvino.opset1 as ov1

    g = rng()
    x, w = g.standard_normal(xs).astype(np.float32), g.standard_normal(ws).astype(np.float32)
    p = ov1.parameter(list(xs), np.float32)
    want = ov_run(_ov_conv(kind, p, w, attrs, output_shape), [p], [x])
    ins = [param("f32", xs), const(w)] + ([] if output_shape is None else [const(np.array(output_shape, np.int64))])
    n = make(CONV_OPS[kind], *ins, **attrs)
    assert n.output_specs[0].shape == PartialShape(want[0].shape)
    assert_close(evaluate(n, [x]), want)


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("kind", "xs", "ws", "attrs", "output_shape"),
    [
        (*FORWARD_CASES[1], None),
        (*FORWARD_CASES[4], None),
        (*FORWARD_CASES[6], None),
        BACKPROP_CASES[0],
        BACKPROP_CASES[-1],
    ],
)
def test_convolution_ir_loads_in_openvino(
    kind: str, xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any], output_shape: list[int] | None
) -> None:
    g = rng()
    x, w = g.standard_normal(xs).astype(np.float32), g.standard_normal(ws).astype(np.float32)
    ins = [param("f32", xs), const(w)] + ([] if output_shape is None else [const(np.array(output_shape, np.int64))])
    check_ir_in_openvino(make(CONV_OPS[kind], *ins, **attrs), [x])


@pytest.mark.openvino
def test_matmul_ir_loads_in_openvino() -> None:
    g = rng()
    xa, xb = g.standard_normal((2, 4, 3)).astype(np.float32), g.standard_normal((5, 4)).astype(np.float32)
    check_ir_in_openvino(
        make(MatMul, param("f32", [2, 4, 3]), param("f32", [5, 4]), transpose_a=True, transpose_b=True), [xa, xb]
    )


def test_backprop_negative_pads_extend_output() -> None:
    # Negative padding adds zero rows/columns around the full transposed-convolution result.
    x = np.ones((1, 1, 2), np.float32)
    w = np.ones((1, 1, 2), np.float32)
    n = make(
        ConvolutionBackpropData,
        param("f32", [1, 1, 2]),
        const(w),
        strides=[1],
        pads_begin=[-1],
        pads_end=[-1],
        dilations=[1],
    )
    (y,) = evaluate(n, [x])
    np.testing.assert_array_equal(y[0, 0], [0, 1, 2, 1, 0])


@pytest.mark.parametrize("t", ["f16", "bf16", "i32"])
@pytest.mark.parametrize("kind", list(CONV_OPS))
def test_convolutions_keep_element_type(kind: str, t: str) -> None:
    # Two input channels, four output channels (two groups of one for the grouped ops).
    ws = {
        "convolution": (4, 2, 3, 3),
        "group_convolution": (2, 2, 1, 3, 3),
        "convolution_backprop_data": (2, 4, 3, 3),
        "group_convolution_backprop_data": (2, 1, 2, 3, 3),
    }[kind]
    n = make(
        CONV_OPS[kind],
        param(t, [1, 2, 5, 5]),
        param(t, list(ws)),
        strides=[1, 1],
        dilations=[1, 1],
        pads_begin=[1, 1],
        pads_end=[1, 1],
    )
    dt = n.output_specs[0].type.np
    g = rng()
    x, w = g.integers(-3, 4, (1, 2, 5, 5)).astype(dt), g.integers(-3, 4, ws).astype(dt)
    (y,) = evaluate(n, [x, w])
    # Small integers are exact in every type, so the f32 result is the exact answer.
    n32 = make(CONV_OPS[kind], param("f32", [1, 2, 5, 5]), param("f32", list(ws)), **n.attrs.model_dump())
    (y32,) = evaluate(n32, [x.astype(np.float32), w.astype(np.float32)])
    np.testing.assert_array_equal(y.astype(np.float32), y32)


def test_convolution_resnet_sized_is_fast() -> None:
    g = rng()
    x = g.standard_normal((1, 256, 56, 56)).astype(np.float32)
    w = g.standard_normal((256, 256, 3, 3)).astype(np.float32)
    n = make(
        Convolution,
        param("f32", [1, 256, 56, 56]),
        const(w),
        strides=[1, 1],
        pads_begin=[1, 1],
        pads_end=[1, 1],
        dilations=[1, 1],
    )
    start = time.perf_counter()
    (y,) = evaluate(n, [x])
    elapsed = time.perf_counter() - start
    assert y.shape == (1, 256, 56, 56)
    # "Well under a second" on a quiet machine; the bound leaves room for a busy CI runner.
    assert elapsed < 3.0, f"a ResNet-sized convolution took {elapsed:.2f} s"
    # Spot-check one output element against a direct sum.
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    direct = float(np.sum(xp[0, :, 10:13, 20:23].astype(np.float64) * w[7].astype(np.float64)))
    assert y[0, 7, 10, 20] == pytest.approx(direct, rel=1e-4, abs=1e-3)
