"""Power with a constant scalar exponent of 2, 3, 0.5, 1 or -1 runs a special form (x*x, x*x*x,
sqrt, copy, 1/x) with pow's IEEE results; every other Power keeps the generic kernel and its
exact semantics (integer powers of negative bases, NaN/inf as NumPy has them)."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import check, const, param
from opforge.graph import Model

SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 0.5, -2.0, 3.0, 1e-30, -1e-30, 1e30, -1e30,
            1e-40, 3.4e38, -3.4e38]


def power_model(dtype: str, exponent: Any, shape: tuple[int, ...], exp_dtype: Any = None) -> Model:
    x = param("x", shape, dtype)
    e = const(exponent, exp_dtype or np.dtype(opforge.Type(dtype).np))
    return Model([opforge.op("Power", x, e, name="pow")])


def run(core: opforge.Core, model: Model, feeds: list[np.ndarray]) -> tuple[np.ndarray, str]:
    """The CPU's output and the implementation that ran the Power node."""
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True, "INFERENCE_NUM_THREADS": 2})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer({i: f for i, f in enumerate(feeds)})[0])
    (row,) = [r for r in req.get_profiling_info() if r.node_type == "Power" and r.status == "EXECUTED"]
    return got, row.exec_type


def inputs(dtype: Any, n: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    with np.errstate(over="ignore"):
        special = np.array(SPECIALS, dtype=dtype)
    return np.concatenate([special, rng.uniform(-4, 4, n).astype(dtype)])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize(("exponent", "impl"), [(2.0, "pow_square"), (3.0, "pow_cube"), (0.5, "pow_sqrt"),
                                                (1.0, "pow_copy"), (-1.0, "pow_reciprocal")])
def test_special_exponents_run_their_form_with_pows_results(core: opforge.Core, dtype: str, exponent: float,
                                                            impl: str) -> None:
    npt = np.dtype(opforge.Type(dtype).np).type
    # 200k elements: more than one thread's share, so the threaded split is exercised too
    x = inputs(npt, 200_000)
    got, ran = run(core, power_model(dtype, exponent, x.shape), [x])
    assert ran == impl
    with np.errstate(all="ignore"):
        want = np.power(x, npt(exponent))
    assert got.dtype == want.dtype
    if exponent == 3.0:
        # one rounding (f32: in double) where pow rounds once too: at most one ulp apart
        np.testing.assert_array_max_ulp(got, want, maxulp=1)
    else:
        np.testing.assert_array_equal(got, want)  # correctly rounded both ways: bit for bit
    # the sign of zero too: -0 ** 0.5 is -0 (NumPy takes it as sqrt), -0 ** 3 is -0, -0 ** -1 is -inf
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1)])
def test_scalar_exponent_of_any_rank_takes_the_special_form(core: opforge.Core, shape: tuple[int, ...]) -> None:
    x = inputs(np.float32, 10).reshape(29, 1)
    model = Model([opforge.op("Power", param("x", x.shape), const(np.full(shape, 2.0)), name="pow")])
    got, ran = run(core, model, [x])
    assert ran == "pow_square"
    with np.errstate(over="ignore"):
        want = np.square(x)
    np.testing.assert_array_equal(got, np.broadcast_to(want, got.shape))


@pytest.mark.parametrize(("x", "exponent", "dtype"), [
    (inputs(np.float32, 50), 1.5, "f32"),            # no special form
    (inputs(np.float32, 50), 4.0, "f32"),
    (inputs(np.float32, 50), -0.5, "f32"),
    (inputs(np.float32, 50), 0.0, "f32"),            # pow(NaN, 0) = 1
    (np.array([-3, -2, -1, 0, 1, 2, 5], np.int32), 3, "i32"),  # integer powers of negative bases
    (np.array([-3, -2, -1, 1, 2], np.int64), -1, "i64"),
    (np.array([-3, -2, 0, 2, 7], np.int32), 2, "i32"),
])
def test_other_exponents_and_types_keep_the_generic_kernel(core: opforge.Core, x: np.ndarray, exponent: float,
                                                          dtype: str) -> None:
    model = power_model(dtype, exponent, x.shape)
    check(core, model, [x], rtol=1e-6, atol=0)
    _, ran = run(core, model, [x])
    assert not ran.startswith("pow_")


def test_exponent_that_broadcasts_x_or_is_fed_at_run_time_keeps_the_generic_kernel(core: opforge.Core) -> None:
    x = np.array([[1.5], [-2.0]], np.float32)
    # x [2, 1] ** e [3]: the output has more elements than x
    wide = Model([opforge.op("Power", param("x", (2, 1)), const([2.0, 2.0, 2.0]), name="pow")])
    check(core, wide, [x])
    assert not run(core, wide, [x])[1].startswith("pow_")
    fed = Model([opforge.op("Power", param("x", (2, 1)), param("e", ()), name="pow")])
    e = np.array(2.0, np.float32)
    check(core, fed, [x, e])
    assert not run(core, fed, [x, e])[1].startswith("pow_")
