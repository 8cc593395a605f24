"""Activation functions (SoftPlus ... PRelu), Clamp and Round: inference, attributes, and the
reference checked against OpenVINO's CPU device (one compiled model for the whole group)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import opforge
import pytest
from opforge.element_type import Type
from opforge.errors import AttributeValidationError, ShapeInferenceError
from opforge.shape import PartialShape

from .oracle import assert_matches, const, openvino_outputs, param, run

RNG = np.random.default_rng(0)
SHAPE = (2, 3, 4)


# --- against OpenVINO --------------------------------------------------------------------------
X = RNG.uniform(-6, 6, SHAPE).astype(np.float32)
WIDE = RNG.uniform(-30, 30, SHAPE).astype(np.float32)
# Every half from -5.5 to 5.5, then random values: what Round's modes disagree on.
HALVES = np.concatenate([np.arange(-11, 13) / 2.0]).reshape(SHAPE).astype(np.float32)
XI = RNG.integers(-5, 6, SHAPE).astype(np.int32)
SLOPE_C = RNG.uniform(0.1, 1, 3).astype(np.float32)
SLOPE_W = RNG.uniform(0.1, 1, 4).astype(np.float32)
SLOPE_B = RNG.uniform(0.1, 1, (1, 3, 1)).astype(np.float32)
# Dimension 1 and the last dimension are equal: the per-channel rule must win over NumPy's.
X33 = RNG.uniform(-6, 6, (2, 3, 3)).astype(np.float32)
INPUTS = {"x": X, "wide": WIDE, "halves": HALVES, "xi": XI, "x33": X33}


def _ov_activation_cases() -> list[tuple[str, str, dict[str, Any], list[np.ndarray], Callable[..., Any]]]:
    """(case id, opforge type, attrs, constant extra inputs, openvino builder(ops, input))."""
    a1 = np.array([1.6732632], np.float32)
    l1 = np.array([1.0507010], np.float32)
    beta = np.array(1.7, np.float32)
    return [
        ("SoftPlus", "wide", {}, [], lambda o, x: o.softplus(x)),
        ("SoftSign", "x", {}, [], lambda o, x: o.softsign(x)),
        ("Mish", "x", {}, [], lambda o, x: o.mish(x)),
        ("HSwish", "x", {}, [], lambda o, x: o.hswish(x)),
        ("HSigmoid", "x", {}, [], lambda o, x: o.hsigmoid(x)),
        ("Gelu", "x", {"approximation_mode": "ERF"}, [], lambda o, x: o.gelu(x, "erf")),
        ("Gelu", "x", {"approximation_mode": "TANH"}, [], lambda o, x: o.gelu(x, "tanh")),
        ("Elu", "x", {"alpha": 0.5}, [], lambda o, x: o.elu(x, 0.5)),
        ("Clamp", "x", {"min": -1.5, "max": 2.5}, [], lambda o, x: o.clamp(x, -1.5, 2.5)),
        ("Clamp", "xi", {"min": -1.5, "max": 2.5}, [], lambda o, x: o.clamp(x, -1.5, 2.5)),
        ("Round", "halves", {"mode": "half_to_even"}, [], lambda o, x: o.round(x, "half_to_even")),
        (
            "Round",
            "halves",
            {"mode": "half_away_from_zero"},
            [],
            lambda o, x: o.round(x, "half_away_from_zero"),
        ),
        ("Swish", "x", {}, [], lambda o, x: o.swish(x)),
        ("Swish", "x", {}, [beta], lambda o, x: o.swish(x, o.constant(beta))),
        ("Selu", "x", {}, [a1, l1], lambda o, x: o.selu(x, o.constant(a1), o.constant(l1))),
        ("PRelu", "x", {}, [SLOPE_C], lambda o, x: o.prelu(x, o.constant(SLOPE_C))),
        ("PRelu", "x", {}, [SLOPE_W], lambda o, x: o.prelu(x, o.constant(SLOPE_W))),
        ("PRelu", "x", {}, [SLOPE_B], lambda o, x: o.prelu(x, o.constant(SLOPE_B))),
        ("PRelu", "x33", {}, [SLOPE_C], lambda o, x: o.prelu(x, o.constant(SLOPE_C))),
    ]


CASES = _ov_activation_cases()
CASE_IDS = [f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)]


@pytest.fixture(scope="module")
def ov_results() -> list[np.ndarray]:
    names = list(INPUTS)

    def build(ops: Any, params: list[Any]) -> list[Any]:
        by_name = dict(zip(names, params))
        return [fn(ops, by_name[inp]) for _, inp, _, _, fn in CASES]

    return openvino_outputs(build, [INPUTS[n] for n in names])


@pytest.mark.openvino
@pytest.mark.parametrize("index", range(len(CASES)), ids=CASE_IDS)
def test_activation_matches_openvino(index: int, ov_results: list[np.ndarray]) -> None:
    op, inp, attrs, extra, _ = CASES[index]
    x = INPUTS[inp]
    ours = run(op, [x, *extra], consts=range(1, 1 + len(extra)), **attrs)
    theirs = ov_results[index]
    assert_matches(ours, theirs, rtol=1e-5, atol=1e-5)


# --- semantics -----------------------------------------------------------------------------------
def test_round_modes() -> None:
    x = np.array([-4.5, -1.9, -1.5, 0.5, 0.9, 1.5, 2.3, 2.5], np.float32)
    np.testing.assert_array_equal(run("Round", [x]), [-4, -2, -2, 0, 1, 2, 2, 2])
    np.testing.assert_array_equal(run("Round", [x], mode="half_away_from_zero"), [-5, -2, -2, 1, 1, 2, 2, 3])
    # The largest float below 0.5 must not be pushed over the half by an addition.
    below_half = np.nextafter(np.float32(0.5), np.float32(0))
    assert run("Round", [np.array([below_half])], mode="half_away_from_zero")[0] == 0
    np.testing.assert_array_equal(run("Round", [np.array([3, -3], np.int8)]), [3, -3])


def test_clamp_integer_bounds() -> None:
    # min is rounded up, max down, both then limited to the type's range.
    np.testing.assert_array_equal(
        run("Clamp", [np.arange(-4, 5, dtype=np.int32)], min=-1.5, max=2.5), [-1, -1, -1, -1, 0, 1, 2, 2, 2]
    )
    np.testing.assert_array_equal(
        run("Clamp", [np.arange(0, 5, dtype=np.uint8)], min=-1.5, max=2.5), [0, 1, 2, 2, 2]
    )
    np.testing.assert_array_equal(
        run("Clamp", [np.array([-5, 300], np.int16)], min=-math.inf, max=math.inf), [-5, 300]
    )
    out = run("Clamp", [np.array([np.nan, -3, 3], np.float32)], min=-1, max=1)
    np.testing.assert_array_equal(out, [np.nan, -1, 1])


def test_clamp_min_above_max_is_rejected() -> None:
    with pytest.raises(AttributeValidationError, match=r"'min' \(2.0\) must be less than or equal to 'max'"):
        opforge.op("Clamp", param("f32", [2]), min=2.0, max=1.0)


def test_required_attributes() -> None:
    with pytest.raises(AttributeValidationError, match="alpha"):
        opforge.op("Elu", param("f32", [2]))
    with pytest.raises(AttributeValidationError, match="max"):
        opforge.op("Clamp", param("f32", [2]), min=0.0)


def test_enum_attributes_accept_either_case() -> None:
    g = opforge.op("Gelu", param("f32", [2]), approximation_mode="tanh")
    assert g.attrs.approximation_mode == "TANH"  # type: ignore[attr-defined]
    default = opforge.op("Gelu", param("f32", [2]))
    assert default.attrs.approximation_mode == "ERF"  # type: ignore[attr-defined]
    r = opforge.op("Round", param("f32", [2]), mode="HALF_AWAY_FROM_ZERO")
    assert r.attrs.mode == "half_away_from_zero"  # type: ignore[attr-defined]
    with pytest.raises(AttributeValidationError, match="approximation_mode"):
        opforge.op("Gelu", param("f32", [2]), approximation_mode="sigmoid")


def test_elu_selu_formulas() -> None:
    x = np.array([-2.0, -0.5, 0.0, 1.5])
    np.testing.assert_allclose(run("Elu", [x], alpha=0.3), np.where(x > 0, x, 0.3 * np.expm1(x)))
    alpha, lam = np.array([2.0]), np.array([3.0])
    np.testing.assert_allclose(
        run("Selu", [x, alpha, lam], consts=[1, 2]), 3.0 * np.where(x > 0, x, 2.0 * np.expm1(x))
    )


def test_prelu_slope_broadcast_rules() -> None:
    x = -np.ones((2, 3, 3), np.float32)
    per_channel = np.array([1, 2, 3], np.float32)
    # A 1-D slope as long as dimension 1 applies per channel, even if the last dimension matches.
    np.testing.assert_array_equal(run("PRelu", [x, per_channel])[0, :, 0], [-1, -2, -3])
    np.testing.assert_array_equal(run("PRelu", [x, per_channel])[0, 0, :], [-1, -1, -1])
    x1 = np.array([-2.0, 3.0], np.float32)
    np.testing.assert_array_equal(run("PRelu", [x1, np.array([0.5], np.float32)]), [-1.0, 3.0])


# --- shape and type inference --------------------------------------------------------------------
UNARY_ACTIVATIONS: dict[str, dict[str, Any]] = {
    "SoftPlus": {},
    "SoftSign": {},
    "Mish": {},
    "HSwish": {},
    "HSigmoid": {},
    "Gelu": {},
    "Elu": {"alpha": 1.0},
    "Clamp": {"min": 0.0, "max": 6.0},
    "Round": {},
}
NUMERIC_OK = {"Clamp", "Round"}


@pytest.mark.parametrize("op", list(UNARY_ACTIVATIONS))
def test_unary_activation_inference(op: str) -> None:
    attrs = UNARY_ACTIVATIONS[op]
    for shape in ([1, 3, 8], [None, 3, None], PartialShape.dynamic()):
        for t in ("f16", "f32"):
            spec = opforge.op(op, param(t, shape), **attrs).output_specs[0]
            assert spec.type is Type.parse(t)
            assert spec.shape == PartialShape(shape)
    bad = "boolean" if op in NUMERIC_OK else "i32"
    with pytest.raises(ShapeInferenceError, match=rf"\({op}\).*input 0 has element type"):
        opforge.op(op, param(bad, [2]), **attrs)


@pytest.mark.parametrize("op", list(UNARY_ACTIVATIONS))
@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64", "i32", "u8"])
def test_unary_activation_output_dtype(op: str, t: str) -> None:
    if op not in NUMERIC_OK and not Type.parse(t).is_float:
        pytest.skip("floating-point only")
    x = np.array([-2, 0, 3]).astype(Type.parse(t).np)
    assert run(op, [x], **UNARY_ACTIVATIONS[op]).dtype == Type.parse(t).np


def test_swish_inference() -> None:
    assert opforge.op("Swish", param("f32", [None, 4])).output_specs[0].shape == PartialShape([None, 4])
    s = opforge.op("Swish", param("f16", PartialShape.dynamic()), param("f16", []))
    assert s.output_specs[0].type is Type.f16 and s.output_specs[0].shape.rank is None
    with pytest.raises(ShapeInferenceError, match=r"\(Swish\).*beta\) must be a scalar"):
        opforge.op("Swish", param("f32", [2, 3]), param("f32", [1]))
    with pytest.raises(ShapeInferenceError, match=r"beta\) has element type float16"):
        opforge.op("Swish", param("f32", [2, 3]), param("f16", []))
    with pytest.raises(ShapeInferenceError, match="expected a float type"):
        opforge.op("Swish", param("i32", [2, 3]))
    for t in ("f16", "bf16", "f64"):
        x = np.array([-1, 0, 2]).astype(Type.parse(t).np)
        assert run("Swish", [x, np.array(1.5).astype(x.dtype)], consts=[1]).dtype == x.dtype


def test_selu_inference() -> None:
    s = opforge.op("Selu", param("f32", [None, 3]), const([1.67], np.float32), const(1.05, np.float32))
    assert s.output_specs[0].shape == PartialShape([None, 3])
    assert (
        opforge.op(
            "Selu",
            param("f32", PartialShape.dynamic()),
            param("f32", [None]),
            param("f32", PartialShape.dynamic()),
        )
        .output_specs[0]
        .shape.rank
        is None
    )
    with pytest.raises(ShapeInferenceError, match=r"\(Selu\).*alpha\) must hold exactly one element"):
        opforge.op("Selu", param("f32", [2]), const([1.0, 2.0], np.float32), const([1.0], np.float32))
    with pytest.raises(ShapeInferenceError, match=r"lambda\) has element type float16"):
        opforge.op("Selu", param("f32", [2]), const([1.0], np.float32), const([1.0], np.float16))
    with pytest.raises(ShapeInferenceError, match="expected a float type"):
        opforge.op("Selu", param("i32", [2]), const([1], np.int32), const([1], np.int32))


def test_prelu_inference() -> None:
    def shape(data: Any, slope: Any) -> PartialShape:
        return opforge.op("PRelu", param("f32", data), param("f32", slope)).output_specs[0].shape

    assert shape([2, 3, 4], [3]) == PartialShape([2, 3, 4])
    assert shape([2, 3, 4], [4]) == PartialShape([2, 3, 4])
    assert shape([2, 3, 4], [1, 3, 1]) == PartialShape([2, 3, 4])
    assert shape([None, None, 4], [3]) == PartialShape([None, None, 4])
    assert shape(PartialShape.dynamic(), [3]) == PartialShape.dynamic()
    assert shape([2, 3, 4], PartialShape.dynamic()) == PartialShape([2, 3, 4])
    with pytest.raises(ShapeInferenceError, match=r"\(PRelu\).*slope\) of shape \[5\]"):
        shape([2, 3, 4], [5])
    with pytest.raises(ShapeInferenceError, match="nor broadcastable"):
        shape([3, 4], [2, 3, 4])
    with pytest.raises(ShapeInferenceError, match="expected a float type"):
        opforge.op("PRelu", param("i32", [2, 3]), param("i32", [3]))
    with pytest.raises(ShapeInferenceError, match=r"slope\) has element type float16"):
        opforge.op("PRelu", param("f32", [2, 3]), param("f16", [3]))
