"""Convert, ConvertLike and CumSum: inference, attributes, and the reference checked against
OpenVINO's CPU device (one compiled model for the whole group)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import opforge
import pytest
from opforge.element_type import Type
from opforge.errors import AttributeValidationError, ShapeInferenceError
from opforge.graph import Node
from opforge.shape import PartialShape

from .oracle import assert_matches, openvino_outputs, param, run

RNG = np.random.default_rng(0)


# --- against OpenVINO --------------------------------------------------------------------------
SPECIAL = [
    3.7,
    -3.7,
    2.5,
    -2.5,
    0.5,
    -0.5,
    127.9,
    -128.9,
    300.0,
    -300.0,
    1e10,
    -1e10,
    np.nan,
    np.inf,
    -np.inf,
    0.0,
]
INPUTS: dict[str, np.ndarray] = {
    # Out-of-range values and NaN included: OpenVINO's x86 results are what the reference mimics.
    "f_special": np.array(SPECIAL, np.float32).reshape(4, 4),
    "f_finite": np.array([3.7, -3.7, 0.0, -0.0, 1e-30, 255.0, 256.5, -1.0], np.float32).reshape(2, 4),
    "i32": np.array([-300, -129, -1, 0, 127, 128, 255, 256, 300, 70000, -70000, 2**31 - 1], np.int32).reshape(
        3, 4
    ),
    "bool": np.array([[True, False], [False, True]]),
    "f16": np.array([3.7, -3.7, 300.0, -0.5], np.float16),
    "cs_f": RNG.uniform(-2, 2, (2, 3, 4)).astype(np.float32),
    "cs_i": RNG.integers(-9, 10, (2, 3, 4)).astype(np.int32),
}

# (id, opforge type, inputs, attrs, extra constant inputs, openvino builder)
CASES: list[tuple[str, str, str, dict[str, Any], list[np.ndarray], Callable[..., Any]]] = []
for _src, _dsts in [
    ("f_special", ["i32", "i16", "i8", "u8", "u16", "f16"]),
    ("f_finite", ["boolean", "i32", "u8", "f64"]),
    ("i32", ["u8", "i8", "u16", "i16", "f32", "f16", "boolean", "u32"]),
    ("bool", ["f32", "i32", "u8"]),
    ("f16", ["i8", "i32", "f32"]),
]:
    for _dst in _dsts:
        CASES.append(
            (
                f"{_src}-to-{_dst}",
                "Convert",
                _src,
                {"destination_type": _dst},
                [],
                lambda o, x, _dst=_dst: o.convert(x, _dst),
            )
        )
_LIKE = np.zeros(1, np.int8)
CASES.append(
    ("like-i8", "ConvertLike", "f_special", {}, [_LIKE], lambda o, x: o.convert_like(x, o.constant(_LIKE)))
)
for _inp in ("cs_f", "cs_i"):
    for _axis in (0, 1, -1):
        for _excl in (False, True):
            for _rev in (False, True):
                _ax = np.array(_axis, np.int64)
                CASES.append(
                    (
                        f"{_inp}-axis{_axis}-excl{int(_excl)}-rev{int(_rev)}",
                        "CumSum",
                        _inp,
                        {"exclusive": _excl, "reverse": _rev},
                        [_ax],
                        lambda o, x, _ax=_ax, _e=_excl, _r=_rev: o.cumsum(x, o.constant(_ax), _e, _r),
                    )
                )
CASES.append(
    ("cs_f-default-axis", "CumSum", "cs_f", {}, [], lambda o, x: o.cumsum(x, o.constant(np.int64(0))))
)


@pytest.fixture(scope="module")
def ov_results() -> list[np.ndarray]:
    names = list(INPUTS)

    def build(ops: Any, params: list[Any]) -> list[Any]:
        by_name = dict(zip(names, params))
        return [fn(ops, by_name[inp]) for _, _, inp, _, _, fn in CASES]

    return openvino_outputs(build, [INPUTS[n] for n in names])


@pytest.mark.openvino
@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_matches_openvino(index: int, ov_results: list[np.ndarray]) -> None:
    _, op, inp, attrs, extra, _ = CASES[index]
    ours = run(op, [INPUTS[inp], *extra], consts=range(1, 1 + len(extra)), **attrs)
    theirs = ov_results[index]
    assert_matches(ours, theirs, rtol=1e-6, atol=1e-6)


# --- Convert semantics beyond what the CPU device computes exactly --------------------------------
def test_float_to_wide_integers() -> None:
    f = np.array([3e9, -1.0, 1.8e19, np.nan], np.float64)
    np.testing.assert_array_equal(run("Convert", [f[:2]], destination_type="u32"), [3_000_000_000, 2**32 - 1])
    np.testing.assert_array_equal(
        run("Convert", [f], destination_type="u64"),
        [3_000_000_000, 2**64 - 1, 18_000_000_000_000_000_000, 2**63],
    )
    np.testing.assert_array_equal(
        run("Convert", [f], destination_type="i64"), [3_000_000_000, -1, -(2**63), -(2**63)]
    )


def test_nan_converts_to_true() -> None:
    np.testing.assert_array_equal(
        run("Convert", [np.array([np.nan, 0.0, -0.0], np.float32)], destination_type="boolean"),
        [True, False, False],
    )


def test_bfloat16_conversions() -> None:
    x = np.array([1.00390625, -2.5, 300.7], np.float32)
    np.testing.assert_array_equal(run("Convert", [x], destination_type="bf16"), x.astype(ml_dtypes.bfloat16))
    xb = x.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(run("Convert", [xb], destination_type="i16"), [1, -2, 300])
    np.testing.assert_array_equal(run("Convert", [np.array([True, False])], destination_type="bf16"), [1, 0])


@pytest.mark.parametrize("src", ["boolean", "f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "u64"])
@pytest.mark.parametrize("dst", ["boolean", "f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "u64"])
def test_convert_every_pair(src: str, dst: str) -> None:
    x = np.array([[0, 1, 2], [5, 1, 0]]).astype(Type.parse(src).np)
    out = run("Convert", [x], destination_type=dst)
    assert out.dtype == Type.parse(dst).np
    np.testing.assert_array_equal(
        out.astype(np.float64), x.astype(np.float64).astype(out.dtype).astype(np.float64)
    )


def test_convert_inference_and_attributes() -> None:
    for shape in ([2, 3], [None, 3], PartialShape.dynamic()):
        s = opforge.op("Convert", param("f32", shape), destination_type="i64").output_specs[0]
        assert (s.type, s.shape) == (Type.i64, PartialShape(shape))
    # IR names and numpy dtypes are both accepted.
    assert (
        opforge.op("Convert", param("f32", [2]), destination_type=np.float16).output_specs[0].type is Type.f16
    )
    assert opforge.op("Convert", param("f32", [2]), destination_type="FP16").output_specs[0].type is Type.f16
    with pytest.raises(AttributeValidationError, match="destination_type"):
        opforge.op("Convert", param("f32", [2]), destination_type="dynamic")
    with pytest.raises(AttributeValidationError, match="destination_type"):
        opforge.op("Convert", param("f32", [2]), destination_type="f128")
    with pytest.raises(AttributeValidationError, match="destination_type"):
        opforge.op("Convert", param("f32", [2]))


def test_convert_like_inference() -> None:
    s = opforge.op("ConvertLike", param("f32", [None, 4]), param("u8", PartialShape.dynamic())).output_specs[
        0
    ]
    assert (s.type, s.shape) == (Type.u8, PartialShape([None, 4]))
    s = opforge.op("ConvertLike", param("f32", [3]), param("dynamic", [1])).output_specs[0]
    assert s.type is Type.dynamic
    out = run("ConvertLike", [np.array([1.9, -1.9], np.float32), np.zeros((5,), np.int16)])
    np.testing.assert_array_equal(out, [1, -1])


# --- CumSum --------------------------------------------------------------------------------------
def test_cumsum_specification_examples() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    axis = np.array(0, np.int64)
    np.testing.assert_array_equal(run("CumSum", [x, axis], consts=[1]), [1, 3, 6, 10, 15])
    np.testing.assert_array_equal(run("CumSum", [x, axis], consts=[1], exclusive=True), [0, 1, 3, 6, 10])
    np.testing.assert_array_equal(run("CumSum", [x, axis], consts=[1], reverse=True), [15, 14, 12, 9, 5])
    np.testing.assert_array_equal(
        run("CumSum", [x, axis], consts=[1], exclusive=True, reverse=True), [14, 12, 9, 5, 0]
    )
    np.testing.assert_array_equal(run("CumSum", [x]), [1, 3, 6, 10, 15])  # axis defaults to 0


def test_cumsum_axis_from_a_parameter_and_types() -> None:
    x = np.arange(6, dtype=np.uint8).reshape(2, 3) * 60
    out = run("CumSum", [x, np.array(-1, np.int32)])
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1, dtype=np.uint8))  # wraps around
    for t in ("f16", "bf16", "f64", "i64"):
        v = np.arange(4).astype(Type.parse(t).np)
        assert run("CumSum", [v]).dtype == v.dtype


def test_cumsum_inference() -> None:
    def spec(data: Any, *axis: Node, t: str = "f32") -> tuple[Type, PartialShape]:
        s = opforge.op("CumSum", param(t, data), *axis).output_specs[0]
        return s.type, s.shape

    axis = opforge.op("Constant", value=np.array(1, np.int64))
    assert spec([2, 3], axis) == (Type.f32, PartialShape([2, 3]))
    assert spec([None, 3], param("i32", [])) == (Type.f32, PartialShape([None, 3]))
    assert spec(PartialShape.dynamic(), axis, t="i8") == (Type.i8, PartialShape.dynamic())
    assert spec([4]) == (Type.f32, PartialShape([4]))
    assert spec([4, 2], param("i64", [1])) == (Type.f32, PartialShape([4, 2]))
    with pytest.raises(ShapeInferenceError, match=r"\(CumSum\).*axis 1 is out of range \[-1, 0\]"):
        spec([4], axis)
    with pytest.raises(ShapeInferenceError, match=r"axis\) must be a scalar"):
        spec([4], param("i64", [2]))
    with pytest.raises(ShapeInferenceError, match=r"axis\) has element type float32"):
        spec([4], param("f32", []))
    with pytest.raises(ShapeInferenceError, match="rank 1 or more"):
        spec([])
    with pytest.raises(ShapeInferenceError, match=r"data\) has element type bool"):
        spec([2], t="boolean")
