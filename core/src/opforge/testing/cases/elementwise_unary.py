"""Element-wise math on one input: every float op on a random tensor in its domain, a rank-0
and an f16 variant of the common ones, integer variants where the op accepts integers, and the
IEEE special values (NaN, +-inf, -0.0) checked against NumPy's own functions."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from opforge.testing.cases import OpCase, case
from opforge.testing.models import fixed, special, tensor


def _np(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    def expect(xs: list[np.ndarray]) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [np.asarray(fn(xs[0])).astype(xs[0].dtype)]
    return expect


_erf = np.vectorize(math.erf, otypes=[np.float64])

#: op -> (value range of its domain, the NumPy function with the same IEEE semantics)
UNARY: dict[str, tuple[tuple[float, float], Callable[[np.ndarray], np.ndarray]]] = {
    "Abs": ((-3, 3), np.abs),
    "Acos": ((-0.95, 0.95), np.arccos),
    "Acosh": ((1.05, 4), np.arccosh),
    "Asin": ((-0.95, 0.95), np.arcsin),
    "Asinh": ((-3, 3), np.arcsinh),
    "Atan": ((-3, 3), np.arctan),
    "Atanh": ((-0.95, 0.95), np.arctanh),
    "Ceiling": ((-3, 3), np.ceil),
    "Cos": ((-3, 3), np.cos),
    "Cosh": ((-3, 3), np.cosh),
    "Erf": ((-3, 3), _erf),
    "Exp": ((-3, 3), np.exp),
    "Floor": ((-3, 3), np.floor),
    "Log": ((0.05, 5), np.log),
    "Negative": ((-3, 3), np.negative),
    "Sign": ((-3, 3), np.sign),
    "Sin": ((-3, 3), np.sin),
    "Sinh": ((-3, 3), np.sinh),
    "Sqrt": ((0, 5), np.sqrt),
    "Tan": ((-1.4, 1.4), np.tan),
    "Tanh": ((-3, 3), np.tanh),
}

#: ops whose special-value results IEEE/C99 define (the inverse trig/hyperbolic ones are left
#: out where libm may differ in the sign of a NaN's payload only; NaN is NaN either way)
SPECIAL = ("Abs", "Ceiling", "Cos", "Cosh", "Erf", "Exp", "Floor", "Log", "Negative", "Sign", "Sin", "Sinh",
           "Sqrt", "Tan", "Tanh", "Atan", "Asinh")
COMMON = ("Abs", "Exp", "Log", "Sqrt", "Tanh", "Negative", "Floor", "Sin")

CASES: list[OpCase] = []
for _op, ((_lo, _hi), _fn) in UNARY.items():
    CASES.append(case(_op, tensor(2, 3, 4, 5, low=_lo, high=_hi)))
    if _op in COMMON:
        CASES.append(case(_op, tensor(low=_lo, high=_hi), label="f32_scalar"))
        CASES.append(case(_op, tensor(3, 17, dtype="f16", low=_lo, high=_hi), rtol=2e-3, atol=2e-3))
    if _op in SPECIAL:
        CASES.append(case(_op, special(), label="f32_special", expect=_np(_fn), rtol=1e-5, atol=1e-6))

for _op in ("Abs", "Negative", "Sign"):
    CASES.append(case(_op, tensor(4, 5, dtype="i32", low=-50, high=50)))
    CASES.append(case(_op, tensor(4, 5, dtype="i64", low=-50, high=50)))

# Round: exact halves are where the two modes differ
_HALVES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.49, 0.49, 1.51]
CASES += [
    case("Round", tensor(3, 4, low=-5, high=5), mode="half_to_even"),
    case("Round", tensor(3, 4, low=-5, high=5), mode="half_away_from_zero", label="f32[3x4]_away"),
    case("Round", special(), mode="half_to_even", label="f32_special", expect=_np(np.round)),
    case("Round", fixed(_HALVES), mode="half_to_even", label="f32_halves_even", expect=_np(np.round)),
    case("Round", fixed(_HALVES), mode="half_away_from_zero", label="f32_halves_away",
         expect=_np(lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5))),
]

# edges: empty and rank-6 tensors, odd sizes (vector loop tails), f64/i8, values at the ends of
# the domain (log of 0 and of a negative, sqrt of a negative, exp overflowing to inf)
CASES += [
    case("Relu", tensor(2, 0, 4), label="f32_empty"),
    case("Exp", tensor(1, 1, 1, 1, 1, 33), label="f32_rank6"),
    case("Exp", tensor(67, low=-100, high=100), label="f32_overflow", rtol=1e-5, atol=1.2e-38),  # FTZ allowed
    case("Tanh", tensor(67, low=-20, high=20), label="f32_saturating"),
    case("Exp", tensor(3, 5, dtype="f64"), rtol=1e-12, atol=1e-12),
    case("Sqrt", tensor(3, 5, dtype="f64", low=0, high=4), rtol=1e-12, atol=1e-12),
    case("Abs", tensor(9, dtype="i8", low=-127, high=127)),
    case("Floor", tensor(5, dtype="f16", low=-3, high=3)),
    case("Log", fixed([0.0, -1.0, 1e-45, 3.4e38, 1.0]), label="f32_domain_ends", expect=_np(np.log)),
    case("Sqrt", fixed([-1.0, -0.0, 4.0, 1e-45]), label="f32_domain_ends", expect=_np(np.sqrt)),
]

# special values in f16 storage too (devices often compute f16 through f32 and back)
CASES += [case(_op, special("f16"), label="f16_special", expect=_np(UNARY[_op][1]), rtol=1e-3, atol=1e-3)
          for _op in ("Abs", "Exp", "Sqrt", "Negative", "Floor", "Tanh")]

# Ceiling and Floor accept integers too (the identity)
CASES += [case(_op, tensor(4, 5, dtype="i32", low=-9, high=9)) for _op in ("Ceiling", "Floor")]
