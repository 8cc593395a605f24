"""FuseRMSNormalization: ``x / sqrt(mean(x^2) + eps)`` (T5's, LLaMA's, torch's rsqrt export) with
its constant scale -> one RMSNormalization with the same values by the reference; near-misses
stay as they are."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from graph_building import const, op, param, rand, types_of
from opforge import Model, Node
from opforge.graph import Value
from opforge.reference import evaluate_model
from opforge.transformations.fuse_rms_norm import FuseRMSNormalization


def rms(x: Value, form: str = "divide", axes: Any = (-1,), eps: float = 1e-6, square: str = "power",
        other: Value | None = None) -> Node:
    """The decomposition; ``other`` replaces x in the division (a near-miss)."""
    sq = op("Power", x, const(2.0)) if square == "power" else op("Multiply", x, x)
    add = op("Add", op("ReduceMean", sq, const(list(axes), np.int64), keep_dims=True), const(eps))
    root = op("Power", add, const(0.5)) if form.startswith("pow_half") else op("Sqrt", add)
    num = x if other is None else other
    if form in ("rsqrt", "pow_half_reciprocal"):  # torch.rsqrt: Sqrt + Reciprocal (Divide(1, .))
        return op("Multiply", num, op("Divide", const(1.0), root))
    if form == "pow_minus_half":
        return op("Multiply", op("Power", add, const(-0.5)), num)
    return op("Divide", num, root)


def fused(model: Model, feed: list[np.ndarray]) -> list[str]:
    want = evaluate_model(model, feed)
    assert FuseRMSNormalization().run(model) == 1
    for got, w in zip(evaluate_model(model, feed), want):
        np.testing.assert_allclose(got, w, rtol=2e-5, atol=1e-6)
    assert FuseRMSNormalization().run(model) == 0
    return types_of(model)


def the_rms(model: Model) -> Node:
    return next(n for n in model.get_ordered_ops() if n.type_name == "RMSNormalization")


@pytest.mark.parametrize("square", ["power", "multiply"])
@pytest.mark.parametrize("form", ["divide", "rsqrt", "pow_half", "pow_half_reciprocal", "pow_minus_half"])
@pytest.mark.parametrize("gamma_first", [False, True])
def test_rms_norm_and_its_scale_become_one_op(form: str, square: str, gamma_first: bool) -> None:
    x = param([2, 5, 16])
    gamma = const(rand((16,), 1))
    n = rms(x, form, square=square)
    model = Model([op("Relu", op("Multiply", gamma, n) if gamma_first else op("Multiply", n, gamma))], [x])
    assert fused(model, [rand((2, 5, 16), 3)]) == ["RMSNormalization", "Relu"]
    r = the_rms(model)
    assert r.attrs.axis == 2 and r.attrs.epsilon == pytest.approx(1e-6)  # type: ignore[attr-defined]
    assert r.inputs[0].node.name == "x" and r.inputs[1].node.constant_value().shape == (16,)


def test_rms_norm_without_a_scale_gets_scale_one() -> None:
    x = param([4, 32])
    model = Model([op("Tanh", rms(x))], [x])
    assert fused(model, [rand((4, 32), 4)]) == ["RMSNormalization", "Tanh"]
    assert the_rms(model).inputs[1].node.constant_value().tolist() == [1.0]


def test_rms_norm_over_two_trailing_axes_with_a_rank_3_scale() -> None:
    x = param([2, 3, 4, 8])
    model = Model([op("Multiply", rms(x, axes=(2, -1)), const(rand((1, 4, 8), 2)))], [x])
    assert fused(model, [rand((2, 3, 4, 8), 5)]) == ["RMSNormalization"]
    r = the_rms(model)
    assert r.attrs.axis == 2 and r.inputs[1].node.constant_value().shape == (4, 8)  # type: ignore[attr-defined]


@pytest.mark.parametrize("gamma_shape", [(2, 1, 16), (5, 16)])
def test_a_scale_that_varies_along_the_rows_stays_a_multiply(gamma_shape: tuple[int, ...]) -> None:
    x = param([2, 5, 16])
    model = Model([op("Multiply", rms(x), const(rand(gamma_shape, 6)))], [x])
    assert fused(model, [rand((2, 5, 16), 7)]) == ["RMSNormalization", "Multiply"]


def test_a_scale_someone_else_reads_the_norm_of_stays_a_multiply() -> None:
    x = param([2, 16])
    n = rms(x)
    model = Model([op("Result", op("Multiply", n, const(rand((16,), 1)))), op("Result", n)], [x])
    assert fused(model, [rand((2, 16), 8)]) == ["RMSNormalization", "Multiply"]


@pytest.mark.parametrize("near_miss", ["leading_axis", "middle_axis_only", "other_numerator", "mean_read_twice",
                                       "cube", "no_keep_dims", "negative_eps", "runtime_eps"])
def test_rms_norm_near_misses_stay(near_miss: str) -> None:
    x, z = param([2, 5, 16]), param([2, 5, 16], "z")
    params = [x, z]
    if near_miss == "leading_axis":
        y = rms(x, axes=(0,))
    elif near_miss == "middle_axis_only":
        y = rms(x, axes=(1,))
    elif near_miss == "other_numerator":
        y = rms(x, other=z)
    elif near_miss == "cube":
        root = op("Sqrt", op("Add", op("ReduceMean", op("Power", x, const(3.0)), const([-1], np.int64),
                                       keep_dims=True), const(1e-6)))
        y = op("Divide", x, root)
    elif near_miss in ("no_keep_dims", "negative_eps", "runtime_eps"):
        mean = op("ReduceMean", op("Power", x, const(2.0)), const([-1], np.int64),
                  keep_dims=near_miss != "no_keep_dims")
        if near_miss == "no_keep_dims":
            mean = op("Unsqueeze", mean, const([-1], np.int64))
        eps: Value = const(-1e-6) if near_miss == "negative_eps" else const(1e-6)
        if near_miss == "runtime_eps":
            eps = param([1], "eps")
            params.append(eps)  # type: ignore[arg-type]
        y = op("Divide", x, op("Sqrt", op("Add", mean, eps)))
    else:
        y = rms(x)
    results = [op("Result", y)]
    if near_miss == "mean_read_twice":
        results.append(op("Result", y.inputs[1].node.inputs[0].node.inputs[0].node))
    model = Model(results, params)
    assert FuseRMSNormalization().run(model) == 0
