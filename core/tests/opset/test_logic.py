"""Comparison, logical, bitwise, IsFinite/IsInf/IsNaN and Select: inference and the reference,
checked against OpenVINO's CPU device (one compiled model for the whole group)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import opforge
import pytest
from opforge.element_type import Type
from opforge.errors import ShapeInferenceError
from opforge.shape import PartialShape

from .oracle import openvino_outputs, param, run

RNG = np.random.default_rng(0)
SHAPE = (2, 3, 4)


# --- against OpenVINO --------------------------------------------------------------------------
# Small integer-valued data, so that equal elements are common.
INPUTS: dict[str, np.ndarray] = {
    "fa": RNG.integers(-2, 3, SHAPE).astype(np.float32),
    "fb": RNG.integers(-2, 3, (3, 4)).astype(np.float32),
    "ia": RNG.integers(-3, 4, SHAPE).astype(np.int32),
    "ib": RNG.integers(-3, 4, (3, 1)).astype(np.int32),
    "ua": RNG.integers(0, 256, SHAPE).astype(np.uint8),
    "ub": RNG.integers(0, 256, (4,)).astype(np.uint8),
    "ba": RNG.random(SHAPE) < 0.5,
    "bb": RNG.random((3, 4)) < 0.5,
    "special": np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 3e38] * 4, np.float32).reshape(SHAPE),
    "cond": RNG.random((3, 1)) < 0.5,
}

# (opforge type, input names, attrs, openvino builder)
CASES: list[tuple[str, tuple[str, ...], dict[str, Any], Callable[..., Any]]] = []
for _op, _fn in [
    ("Equal", "equal"),
    ("NotEqual", "not_equal"),
    ("Less", "less"),
    ("LessEqual", "less_equal"),
    ("Greater", "greater"),
    ("GreaterEqual", "greater_equal"),
]:
    for _ins in (("fa", "fb"), ("ia", "ib"), ("ba", "bb")):
        CASES.append((_op, _ins, {}, lambda o, a, b, _fn=_fn: getattr(o, _fn)(a, b)))
for _op, _fn in [("LogicalAnd", "logical_and"), ("LogicalOr", "logical_or"), ("LogicalXor", "logical_xor")]:
    CASES.append((_op, ("ba", "bb"), {}, lambda o, a, b, _fn=_fn: getattr(o, _fn)(a, b)))
for _op, _fn in [("BitwiseAnd", "bitwise_and"), ("BitwiseOr", "bitwise_or"), ("BitwiseXor", "bitwise_xor")]:
    for _ins in (("ia", "ib"), ("ua", "ub"), ("ba", "bb")):
        CASES.append((_op, _ins, {}, lambda o, a, b, _fn=_fn: getattr(o, _fn)(a, b)))
CASES += [
    ("LogicalNot", ("ba",), {}, lambda o, a: o.logical_not(a)),
    ("BitwiseNot", ("ia",), {}, lambda o, a: o.bitwise_not(a)),
    ("BitwiseNot", ("ua",), {}, lambda o, a: o.bitwise_not(a)),
    ("BitwiseNot", ("ba",), {}, lambda o, a: o.bitwise_not(a)),
    ("IsFinite", ("special",), {}, lambda o, a: o.is_finite(a)),
    ("IsNaN", ("special",), {}, lambda o, a: o.is_nan(a)),
    ("IsInf", ("special",), {}, lambda o, a: o.is_inf(a)),
    ("IsInf", ("special",), {"detect_negative": False}, lambda o, a: o.is_inf(a, {"detect_negative": False})),
    ("IsInf", ("special",), {"detect_positive": False}, lambda o, a: o.is_inf(a, {"detect_positive": False})),
    ("Select", ("cond", "fa", "fb"), {}, lambda o, c, a, b: o.select(c, a, b)),
    ("Select", ("cond", "ia", "ib"), {}, lambda o, c, a, b: o.select(c, a, b)),
]
CASE_IDS = [f"{c[0]}-{'-'.join(c[1])}-{c[2]}" for c in CASES]


@pytest.fixture(scope="module")
def ov_results() -> list[np.ndarray]:
    names = list(INPUTS)

    def build(ops: Any, params: list[Any]) -> list[Any]:
        by_name = dict(zip(names, params))
        return [fn(ops, *(by_name[i] for i in ins)) for _, ins, _, fn in CASES]

    return openvino_outputs(build, [INPUTS[n] for n in names])


@pytest.mark.openvino
@pytest.mark.parametrize("index", range(len(CASES)), ids=CASE_IDS)
def test_logic_matches_openvino(index: int, ov_results: list[np.ndarray]) -> None:
    op, ins, attrs, _ = CASES[index]
    ours = run(op, [INPUTS[i] for i in ins], **attrs)
    np.testing.assert_array_equal(ours, ov_results[index])


# --- shape and type inference --------------------------------------------------------------------
COMPARISONS = ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"]
LOGICAL = ["LogicalAnd", "LogicalOr", "LogicalXor"]
BITWISE = ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]


@pytest.mark.parametrize("op", COMPARISONS + LOGICAL + BITWISE)
def test_binary_logic_inference(op: str) -> None:
    t = "boolean" if op in LOGICAL else "i32"
    out_t = Type.parse(t) if op in BITWISE else Type.boolean

    def spec(a: Any, b: Any, **attrs: Any) -> tuple[Type, PartialShape]:
        s = opforge.op(op, param(t, a), param(t, b), **attrs).output_specs[0]
        return s.type, s.shape

    assert spec([2, 1, 4], [3, 1]) == (out_t, PartialShape([2, 3, 4]))
    assert spec([None, 3], [2, 1]) == (out_t, PartialShape([2, 3]))
    assert spec(PartialShape.dynamic(), [3]) == (out_t, PartialShape.dynamic())
    with pytest.raises(ShapeInferenceError, match=rf"\({op}\).*cannot be broadcast"):
        spec([2, 3], [4])
    with pytest.raises(ShapeInferenceError, match="auto_broadcast is 'none'"):
        spec([2, 3], [3], auto_broadcast="none")
    with pytest.raises(ShapeInferenceError, match="different element types"):
        opforge.op(op, param(t, [2]), param("u8" if t != "u8" else "i8", [2]))


def test_binary_logic_type_rules() -> None:
    for op in COMPARISONS:  # any element type, boolean output
        for t in ("f16", "bf16", "f64", "u64", "boolean"):
            assert opforge.op(op, param(t, [2]), param(t, [2])).output_specs[0].type is Type.boolean
    for op in LOGICAL:
        with pytest.raises(ShapeInferenceError, match="expected a boolean type"):
            opforge.op(op, param("i32", [2]), param("i32", [2]))
    for op in BITWISE:
        assert (
            opforge.op(op, param("boolean", [2]), param("boolean", [2])).output_specs[0].type is Type.boolean
        )
        with pytest.raises(ShapeInferenceError, match="expected a integral or boolean type"):
            opforge.op(op, param("f32", [2]), param("f32", [2]))


@pytest.mark.parametrize(
    ("op", "good", "bad"),
    [
        ("LogicalNot", "boolean", "f32"),
        ("BitwiseNot", "u16", "f32"),
        ("IsFinite", "f16", "i32"),
        ("IsNaN", "bf16", "i32"),
        ("IsInf", "f64", "boolean"),
    ],
)
def test_unary_logic_inference(op: str, good: str, bad: str) -> None:
    out_t = Type.boolean if op.startswith("Is") else Type.parse(good)
    for shape in ([2, 3], [None, 3], PartialShape.dynamic()):
        s = opforge.op(op, param(good, shape)).output_specs[0]
        assert (s.type, s.shape) == (out_t, PartialShape(shape))
    with pytest.raises(ShapeInferenceError, match=rf"\({op}\).*input 0 has element type"):
        opforge.op(op, param(bad, [2]))


@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64"])
def test_is_checks_on_every_float_type(t: str) -> None:
    x = np.array([np.nan, np.inf, -np.inf, 1.0]).astype(Type.parse(t).np)
    np.testing.assert_array_equal(run("IsNaN", [x]), [True, False, False, False])
    np.testing.assert_array_equal(run("IsFinite", [x]), [False, False, False, True])
    np.testing.assert_array_equal(run("IsInf", [x]), [False, True, True, False])
    np.testing.assert_array_equal(
        run("IsInf", [x], detect_positive=False, detect_negative=False), [False] * 4
    )


def test_bitwise_values() -> None:
    np.testing.assert_array_equal(run("BitwiseNot", [np.array([1, 3], np.uint8)]), [254, 252])
    np.testing.assert_array_equal(run("BitwiseNot", [np.array([0, -1], np.int16)]), [-1, 0])
    np.testing.assert_array_equal(run("BitwiseNot", [np.array([True, False])]), [False, True])
    np.testing.assert_array_equal(
        run("BitwiseAnd", [np.array([12], np.int64), np.array([10], np.int64)]), [8]
    )
    np.testing.assert_array_equal(
        run("BitwiseOr", [np.array([12], np.int64), np.array([10], np.int64)]), [14]
    )
    np.testing.assert_array_equal(
        run("BitwiseXor", [np.array([12], np.int64), np.array([10], np.int64)]), [6]
    )


def test_comparisons_with_nan() -> None:
    a = np.array([np.nan, 1.0], np.float32)
    b = np.array([np.nan, np.nan], np.float32)
    np.testing.assert_array_equal(run("Equal", [a, b]), [False, False])
    np.testing.assert_array_equal(run("NotEqual", [a, b]), [True, True])
    np.testing.assert_array_equal(run("LessEqual", [a, b]), [False, False])


# --- Select --------------------------------------------------------------------------------------
def test_select_inference() -> None:
    def spec(
        c: Any, t: Any, e: Any, tt: str = "f32", tc: str = "boolean", **attrs: Any
    ) -> tuple[Type, PartialShape]:
        s = opforge.op("Select", param(tc, c), param(tt, t), param(tt, e), **attrs).output_specs[0]
        return s.type, s.shape

    assert spec([3, 2], [3, 2], [3, 2]) == (Type.f32, PartialShape([3, 2]))
    # numpy: the condition takes part in the broadcast like the two values.
    assert spec([2, 3], [3], [3]) == (Type.f32, PartialShape([2, 3]))
    assert spec([3], [2, 1], [1]) == (Type.f32, PartialShape([2, 3]))
    assert spec([None, 3], [2, None], [None], tt="i64") == (Type.i64, PartialShape([2, 3]))
    assert spec(PartialShape.dynamic(), [2], [2]) == (Type.f32, PartialShape.dynamic())
    assert spec([2, 3], [2, 3], [2, 3], auto_broadcast="none") == (Type.f32, PartialShape([2, 3]))
    assert spec([2, 3], [2, 3], [3], tt="boolean") == (Type.boolean, PartialShape([2, 3]))
    with pytest.raises(ShapeInferenceError, match="auto_broadcast is 'none'"):
        spec([2, 3], [2, 3], [3], auto_broadcast="none")
    with pytest.raises(ShapeInferenceError, match=r"\(Select\).*cannot be broadcast"):
        spec([4], [2, 3], [3])
    with pytest.raises(ShapeInferenceError, match=r"cond\) has element type int32, expected boolean"):
        spec([2], [2], [2], tc="i32")
    with pytest.raises(ShapeInferenceError, match="different element types: float32 and int32"):
        opforge.op("Select", param("boolean", [2]), param("f32", [2]), param("i32", [2]))


def test_select_values() -> None:
    cond = np.array([[False, False], [True, False], [True, True]])
    then = np.array([[-1, 0], [1, 2], [3, 4]], np.int8)
    other = np.array([[11, 10], [9, 8], [7, 6]], np.int8)
    np.testing.assert_array_equal(run("Select", [cond, then, other]), [[11, 10], [1, 8], [3, 4]])
    # pdpd aligns the smaller inputs with the trailing dimensions of the larger.
    t = RNG.uniform(size=(2, 3, 4)).astype(np.float32)
    e = RNG.uniform(size=(3, 4)).astype(np.float32)
    c = RNG.random((4,)) < 0.5
    np.testing.assert_array_equal(run("Select", [c, t, e], auto_broadcast="pdpd"), np.where(c, t, e))
