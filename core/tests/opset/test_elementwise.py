"""Unary math and binary arithmetic operations: shape/type inference, and the NumPy reference
checked against OpenVINO's CPU device (one compiled model per group of operations)."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import opforge
import pytest
from opforge.element_type import Type
from opforge.errors import ShapeInferenceError
from opforge.shape import PartialShape

from .oracle import assert_matches, openvino_outputs, param, run

RNG = np.random.default_rng(0)
SHAPE = (2, 3, 4)


# --- unary math --------------------------------------------------------------------------------
DOMAINS: dict[str, np.ndarray] = {
    "any": RNG.uniform(-3, 3, SHAPE).astype(np.float32),
    "unit": RNG.uniform(-0.95, 0.95, SHAPE).astype(np.float32),
    "ge1": RNG.uniform(1.0, 4.0, SHAPE).astype(np.float32),
    "pos": RNG.uniform(0.1, 4.0, SHAPE).astype(np.float32),
    "int": RNG.integers(-5, 6, SHAPE).astype(np.int32),
    "int_pos": RNG.integers(1, 30, SHAPE).astype(np.int32),
    "int_unit": RNG.integers(-1, 2, SHAPE).astype(np.int32),
}

# (opforge type, input domain, openvino.opset13 function)
UNARY_CASES = [
    ("Abs", "any", "absolute"),
    ("Abs", "int", "absolute"),
    ("Acos", "unit", "acos"),
    ("Acos", "int_unit", "acos"),
    ("Acosh", "ge1", "acosh"),
    ("Acosh", "int_pos", "acosh"),
    ("Asin", "unit", "asin"),
    ("Asinh", "any", "asinh"),
    ("Asinh", "int", "asinh"),
    ("Atan", "any", "atan"),
    ("Atan", "int", "atan"),
    ("Atanh", "unit", "atanh"),
    ("Ceiling", "any", "ceiling"),
    ("Ceiling", "int", "ceiling"),
    ("Cos", "any", "cos"),
    ("Cos", "int", "cos"),
    ("Cosh", "any", "cosh"),
    ("Cosh", "int", "cosh"),
    ("Erf", "any", "erf"),
    ("Erf", "int", "erf"),
    ("Exp", "any", "exp"),
    ("Floor", "any", "floor"),
    ("Floor", "int", "floor"),
    ("Log", "pos", "log"),
    ("Log", "int_pos", "log"),
    ("Negative", "any", "negative"),
    ("Negative", "int", "negative"),
    ("Sigmoid", "any", "sigmoid"),
    ("Sign", "any", "sign"),
    ("Sign", "int", "sign"),
    ("Sin", "any", "sin"),
    ("Sin", "int", "sin"),
    ("Sinh", "any", "sinh"),
    ("Sinh", "int", "sinh"),
    ("Sqrt", "pos", "sqrt"),
    ("Sqrt", "int_pos", "sqrt"),
    ("Tan", "unit", "tan"),
    ("Tan", "int", "tan"),
    ("Tanh", "any", "tanh"),
    ("Tanh", "int", "tanh"),
]
UNARY_OPS = sorted({c[0] for c in UNARY_CASES})
FLOAT_ONLY = {"Exp", "Sigmoid"}


@pytest.fixture(scope="module")
def ov_unary() -> dict[tuple[str, str], np.ndarray]:
    names = list(DOMAINS)

    def build(ops: Any, params: list[Any]) -> list[Any]:
        by_domain = dict(zip(names, params))
        return [getattr(ops, fn)(by_domain[dom]) for _, dom, fn in UNARY_CASES]

    outs = openvino_outputs(build, [DOMAINS[n] for n in names])
    return {(op, dom): out for (op, dom, _), out in zip(UNARY_CASES, outs)}


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("op", "domain"), [c[:2] for c in UNARY_CASES], ids=[f"{c[0]}-{c[1]}" for c in UNARY_CASES]
)
def test_unary_matches_openvino(op: str, domain: str, ov_unary: dict[tuple[str, str], np.ndarray]) -> None:
    ours = run(op, [DOMAINS[domain]])
    assert_matches(ours, ov_unary[(op, domain)], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("op", UNARY_OPS)
def test_unary_shape_inference(op: str) -> None:
    t = "f32"
    for shape in ([2, 3], [None, 3], PartialShape.dynamic(), []):
        spec = opforge.op(op, param(t, shape)).output_specs[0]
        assert spec.type is Type.f32
        assert spec.shape == PartialShape(shape)
    bad = "i32" if op in FLOAT_ONLY else "boolean"
    with pytest.raises(ShapeInferenceError, match=rf"\({op}\).*input 0 has element type"):
        opforge.op(op, param(bad, [2]))


@pytest.mark.parametrize("op", UNARY_OPS)
@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8"])
def test_unary_output_dtype_is_inferred_type(op: str, t: str) -> None:
    if op in FLOAT_ONLY and not Type.parse(t).is_float:
        pytest.skip("floating-point only")
    x = np.array([[0, 1, 2], [3, 1, 0]]).astype(Type.parse(t).np)
    out = run(op, [x])
    assert out.dtype == Type.parse(t).np


def test_unary_integer_results_are_rounded_half_away_from_zero() -> None:
    x = np.array([2, 3, 7, 10], np.int32)
    np.testing.assert_array_equal(run("Sqrt", [x]), [1, 2, 3, 3])  # 1.41, 1.73, 2.65, 3.16
    np.testing.assert_array_equal(run("Tanh", [np.array([-1, 0, 1], np.int8)]), [-1, 0, 1])
    # Out of the domain: NaN becomes the "integer indefinite" value, as C++ on x86 gives.
    assert run("Log", [np.array([-1], np.int32)])[0] == np.iinfo(np.int32).min


def test_unary_integer_edge_cases_wrap_like_cpp() -> None:
    imin = np.iinfo(np.int32).min
    np.testing.assert_array_equal(run("Abs", [np.array([imin, -3], np.int32)]), [imin, 3])
    np.testing.assert_array_equal(run("Negative", [np.array([1, 0], np.uint8)]), [255, 0])
    np.testing.assert_array_equal(run("Sign", [np.array([0, 7], np.uint16)]), [0, 1])


def test_unary_float_special_values() -> None:
    x = np.array([np.nan, -0.0, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(run("Sign", [x]), [np.nan, 0, 1, -1])
    np.testing.assert_array_equal(run("Sqrt", [np.array([-1.0, 4.0], np.float32)]), [np.nan, 2.0])
    np.testing.assert_array_equal(run("Exp", [np.array([-1000.0, 0.0], np.float32)]), [0.0, 1.0])
    np.testing.assert_array_equal(run("Sigmoid", [np.array([-1000.0, 1000.0], np.float32)]), [0.0, 1.0])


def test_erf_matches_math_erf() -> None:
    x = RNG.uniform(-4, 4, 50)
    np.testing.assert_allclose(run("Erf", [x]), [math.erf(v) for v in x], rtol=0, atol=1e-15)


def test_half_precision_is_computed_in_f32() -> None:
    x = RNG.uniform(-2, 2, 20).astype(np.float32)
    for dt in (np.float16, ml_dtypes.bfloat16):
        xh = x.astype(dt)
        want = np.sin(xh.astype(np.float32)).astype(dt)
        np.testing.assert_array_equal(run("Sin", [xh]), want)


# --- binary arithmetic -------------------------------------------------------------------------
A_F = RNG.uniform(-3, 3, SHAPE).astype(np.float32)
B_F = (RNG.uniform(0.5, 3, (3, 4)) * RNG.choice([-1, 1], (3, 4))).astype(np.float32)
POS_F = RNG.uniform(0.1, 3, SHAPE).astype(np.float32)
A_I = RNG.integers(-20, 21, SHAPE).astype(np.int32)
B_I = (RNG.integers(1, 6, (3, 4)) * RNG.choice([-1, 1], (3, 4))).astype(np.int32)
BASE_I = (RNG.integers(1, 4, SHAPE) * RNG.choice([-1, 1], SHAPE)).astype(np.int32)
EXP_I = RNG.integers(-2, 5, (3, 4)).astype(np.int32)

BINARY_INPUTS: dict[str, tuple[np.ndarray, np.ndarray]] = {
    "f32": (A_F, B_F),
    "f32_pow": (POS_F, B_F),
    "i32": (A_I, B_I),
    "i32_pow": (BASE_I, EXP_I),
}

# (opforge type, inputs, openvino.opset13 function)
BINARY_CASES = [
    ("Add", "f32", "add"),
    ("Subtract", "f32", "subtract"),
    ("Subtract", "i32", "subtract"),
    ("Multiply", "f32", "multiply"),
    ("Multiply", "i32", "multiply"),
    ("Divide", "f32", "divide"),
    ("Power", "f32_pow", "power"),
    ("Power", "i32_pow", "power"),
    ("Maximum", "f32", "maximum"),
    ("Maximum", "i32", "maximum"),
    ("Minimum", "f32", "minimum"),
    ("Minimum", "i32", "minimum"),
    ("SquaredDifference", "f32", "squared_difference"),
    ("SquaredDifference", "i32", "squared_difference"),
    ("FloorMod", "f32", "floor_mod"),
    ("FloorMod", "i32", "floor_mod"),
    ("Mod", "f32", "mod"),
    ("Mod", "i32", "mod"),
]
ARITHMETIC_OPS = [
    "Subtract",
    "Multiply",
    "Divide",
    "Power",
    "Maximum",
    "Minimum",
    "SquaredDifference",
    "FloorMod",
    "Mod",
]


@pytest.fixture(scope="module")
def ov_binary() -> dict[tuple[str, str], np.ndarray]:
    names = list(BINARY_INPUTS)
    arrays = [a for n in names for a in BINARY_INPUTS[n]]

    def build(ops: Any, params: list[Any]) -> list[Any]:
        pairs = {n: (params[2 * i], params[2 * i + 1]) for i, n in enumerate(names)}
        outs = [getattr(ops, fn)(*pairs[inp]) for _, inp, fn in BINARY_CASES]
        # Divide with m_pythondiv=false (the CPU device truncates integer quotients whatever the
        # attribute says, so only this setting can be compared with it).
        from openvino.utils.node_factory import NodeFactory

        a, b = pairs["i32"]
        outs.append(
            NodeFactory("opset1").create(
                "Divide", [a.output(0), b.output(0)], {"auto_broadcast": "numpy", "m_pythondiv": False}
            )
        )
        return outs

    outs = openvino_outputs(build, arrays)
    got = {(op, inp): out for (op, inp, _), out in zip(BINARY_CASES, outs)}
    got[("Divide", "i32_trunc")] = outs[-1]
    return got


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("op", "inputs"), [c[:2] for c in BINARY_CASES], ids=[f"{c[0]}-{c[1]}" for c in BINARY_CASES]
)
def test_binary_matches_openvino(op: str, inputs: str, ov_binary: dict[tuple[str, str], np.ndarray]) -> None:
    ours = run(op, list(BINARY_INPUTS[inputs]))
    assert ours.shape == SHAPE
    assert_matches(ours, ov_binary[(op, inputs)], rtol=2e-5, atol=2e-6)


@pytest.mark.openvino
def test_integer_divide_truncating_matches_openvino(ov_binary: dict[tuple[str, str], np.ndarray]) -> None:
    ours = run("Divide", list(BINARY_INPUTS["i32"]), m_pythondiv=False)
    np.testing.assert_array_equal(ours, ov_binary[("Divide", "i32_trunc")])


def test_integer_divide_floors_by_default() -> None:
    a = np.array([-7, 7, -7, 7, 6, 0], np.int32)
    b = np.array([2, -2, -2, 2, 3, 5], np.int32)
    np.testing.assert_array_equal(run("Divide", [a, b]), [-4, -4, 3, 3, 2, 0])
    np.testing.assert_array_equal(run("Divide", [a, b], m_pythondiv=False), [-3, -3, 3, 3, 2, 0])
    # Floats ignore the attribute.
    np.testing.assert_array_equal(
        run("Divide", [a.astype(np.float32), b.astype(np.float32)]), [-3.5, -3.5, 3.5, 3.5, 2, 0]
    )


def test_mod_and_floor_mod_signs() -> None:
    a = np.array([-7, 7, -7, 7], np.int64)
    b = np.array([3, -3, -3, 3], np.int64)
    np.testing.assert_array_equal(run("Mod", [a, b]), [-1, 1, -1, 1])  # sign of the dividend
    np.testing.assert_array_equal(run("FloorMod", [a, b]), [2, -2, -1, 1])  # sign of the divisor
    af, bf = a.astype(np.float16) + 0.5, b.astype(np.float16)
    np.testing.assert_array_equal(run("Mod", [af, bf]), [-0.5, 1.5, -0.5, 1.5])
    np.testing.assert_array_equal(run("FloorMod", [af, bf]), [2.5, -1.5, -0.5, 1.5])


def test_integer_power_with_negative_exponent() -> None:
    base = np.array([2, -1, -1, 1, 3, -2], np.int32)
    exp = np.array([-1, -1, -2, -5, 2, 3], np.int32)
    np.testing.assert_array_equal(run("Power", [base, exp]), [0, -1, 1, 1, 9, -8])


def test_maximum_minimum_propagate_nan_from_either_input() -> None:
    # ONNX Runtime and IEEE 754-2019 maximum/minimum: NaN whichever side it is on
    a = np.array([1.0, np.nan], np.float32)
    b = np.array([np.nan, 1.0], np.float32)
    np.testing.assert_array_equal(run("Maximum", [a, b]), [np.nan, np.nan])
    np.testing.assert_array_equal(run("Minimum", [a, b]), [np.nan, np.nan])


def test_unsigned_arithmetic_wraps() -> None:
    a, b = np.array([1, 5], np.uint8), np.array([5, 1], np.uint8)
    np.testing.assert_array_equal(run("Subtract", [a, b]), [252, 4])
    np.testing.assert_array_equal(run("SquaredDifference", [a, b]), [16, 16])


@pytest.mark.parametrize("op", ARITHMETIC_OPS)
def test_binary_shape_inference(op: str) -> None:
    def out(a: Any, b: Any, **attrs: Any) -> PartialShape:
        return opforge.op(op, param("f32", a), param("f32", b), **attrs).output_specs[0].shape

    assert out([2, 1, 4], [3, 1]) == PartialShape([2, 3, 4])
    assert out([None, 3], [2, 1]) == PartialShape([2, 3])
    assert out([None, 3], [None, 1]) == PartialShape([None, 3])
    assert out([2, 3], PartialShape.dynamic()) == PartialShape.dynamic()
    assert out([2, 3], [2, 3], auto_broadcast="none") == PartialShape([2, 3])
    assert out([2, 3, 4], [3, 1], auto_broadcast="pdpd") == PartialShape([2, 3, 4])
    with pytest.raises(ShapeInferenceError, match=rf"\({op}\).*cannot be broadcast"):
        out([2, 3], [4])
    with pytest.raises(ShapeInferenceError, match="auto_broadcast is 'none'"):
        out([2, 3], [1, 3], auto_broadcast="none")
    with pytest.raises(ShapeInferenceError, match="different element types"):
        opforge.op(op, param("f32", [2]), param("i32", [2]))
    with pytest.raises(ShapeInferenceError, match="expected a numeric type"):
        opforge.op(op, param("boolean", [2]), param("boolean", [2]))


@pytest.mark.parametrize("op", ARITHMETIC_OPS)
@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "u64"])
def test_binary_output_dtype_is_inferred_type(op: str, t: str) -> None:
    dt = Type.parse(t).np
    a = np.array([[4, 5, 6], [7, 8, 9]]).astype(dt)
    b = np.array([1, 2, 3]).astype(dt)
    out = run(op, [a, b])
    assert out.dtype == dt
    assert out.shape == (2, 3)


def test_pdpd_broadcast_evaluates() -> None:
    a = RNG.uniform(-1, 1, SHAPE).astype(np.float32)
    b = RNG.uniform(-1, 1, (3, 1)).astype(np.float32)
    # PaddlePaddle style aligns b with the trailing dimensions of a (axis -1).
    np.testing.assert_array_equal(run("Subtract", [a, b], auto_broadcast="pdpd"), a - b[None])
