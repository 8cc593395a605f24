"""Element-wise arithmetic on two inputs: same shapes, NumPy broadcasting, f16 and integer
variants, and every pair of IEEE special values (NaN, +-inf, +-0) against NumPy's operators."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from opforge.testing.cases import OpCase, case
from opforge.testing.models import fixed, special_pairs, tensor


def _np2(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    def expect(xs: list[np.ndarray]) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [np.asarray(fn(xs[0], xs[1])).astype(xs[0].dtype)]
    return expect


#: op -> (range of the first input, range of the second, NumPy operator with IEEE semantics or None)
BINARY: dict[str, tuple[tuple[float, float], tuple[float, float], Callable[..., np.ndarray] | None]] = {
    "Add": ((-3, 3), (-3, 3), np.add),
    "Subtract": ((-3, 3), (-3, 3), np.subtract),
    "Multiply": ((-3, 3), (-3, 3), np.multiply),
    "Divide": ((-3, 3), (0.5, 3), np.divide),
    "Maximum": ((-3, 3), (-3, 3), np.maximum),
    "Minimum": ((-3, 3), (-3, 3), np.minimum),
    "Power": ((0.1, 3), (-2, 2), np.power),
    "SquaredDifference": ((-3, 3), (-3, 3), lambda a, b: np.square(a - b)),
    "FloorMod": ((-5, 5), (0.5, 3), None),
    "Mod": ((-5, 5), (0.5, 3), None),
}
#: ops with integer variants (the divisor range avoids 0)
INTEGER = {"Add": (-50, 50), "Subtract": (-50, 50), "Multiply": (-20, 20), "Divide": (1, 7),
           "Maximum": (-50, 50), "Minimum": (-50, 50), "SquaredDifference": (-20, 20), "FloorMod": (1, 7),
           "Mod": (1, 7), "Power": (0, 3)}

CASES: list[OpCase] = []
for _op, (_ra, _rb, _fn) in BINARY.items():
    CASES += [
        case(_op, tensor(2, 3, 4, low=_ra[0], high=_ra[1]), tensor(2, 3, 4, low=_rb[0], high=_rb[1])),
        case(_op, tensor(2, 3, 4, low=_ra[0], high=_ra[1]), tensor(3, 1, low=_rb[0], high=_rb[1])),
        case(_op, tensor(1, 5, low=_ra[0], high=_ra[1]), tensor(4, 1, low=_rb[0], high=_rb[1])),
        case(_op, tensor(3, 9, dtype="f16", low=_ra[0], high=_ra[1]),
             tensor(3, 9, dtype="f16", low=_rb[0], high=_rb[1]), rtol=3e-3, atol=3e-3),
    ]
    _lo, _hi = INTEGER[_op]
    _sign = -_hi if _op in ("Divide", "FloorMod", "Mod") else _lo  # dividends of both signs
    for _dt in ("i32", "i64"):
        CASES.append(case(_op, tensor(3, 4, dtype=_dt, low=_sign, high=_hi), tensor(3, 4, dtype=_dt, low=_lo, high=_hi)))
    if _fn is not None:
        CASES.append(case(_op, *special_pairs(), label="f32_special", expect=_np2(_fn)))

CASES += [
    # integer division with negative operands: Python's floor division or C's truncation
    case("Divide", fixed([-7, 7, -7, 7, -1, 0], "i32"), fixed([2, -2, -2, 2, 3, 5], "i32"),
         label="i32_floor", m_pythondiv=True, expect=_np2(np.floor_divide)),
    case("Divide", fixed([-7, 7, -7, 7, -1, 0], "i32"), fixed([2, -2, -2, 2, 3, 5], "i32"),
         label="i32_trunc", m_pythondiv=False, expect=_np2(lambda a, b: np.trunc(a / b))),
    # FloorMod takes the divisor's sign, Mod the dividend's
    case("FloorMod", fixed([-7.0, 7.0, -7.5, 7.5]), fixed([2.0, -2.0, 2.0, -2.0]), label="f32_signs",
         expect=_np2(np.mod)),
    case("Mod", fixed([-7.0, 7.0, -7.5, 7.5]), fixed([2.0, -2.0, 2.0, -2.0]), label="f32_signs",
         expect=_np2(np.fmod)),
    case("Add", tensor(2, 3, 4), tensor(3, 1), label="f32_pdpd", auto_broadcast="pdpd"),
    case("Add", tensor(dtype="f32"), tensor(2, 3), label="f32_scalar_broadcast"),
    case("Multiply", tensor(2, 3, 4, 5, 6, dtype="f32"), tensor(1, 3, 1, 5, 1), label="f32_rank5_broadcast"),
    case("Add", tensor(2, 3, dtype="u8", low=0, high=100), tensor(2, 3, dtype="u8", low=0, high=100)),
]

# edges: empty and rank-6 broadcasts, a long odd length, f64/i8, division by (signed) zero,
# powers at the ends of the domain, overflow to inf
CASES += [
    case("Add", tensor(0, 3), tensor(0, 3), label="f32_empty"),
    case("Add", tensor(2, 1, 3, 1, 5, 1), tensor(1, 4, 1, 2, 1, 3), label="f32_rank6_broadcast"),
    case("Multiply", tensor(1031), tensor(1031), label="f32_1031"),
    case("Add", tensor(3, 4, dtype="f64"), tensor(4, dtype="f64"), rtol=1e-12, atol=1e-12),
    case("Subtract", tensor(3, 4, dtype="i8", low=-60, high=60), tensor(3, 4, dtype="i8", low=-60, high=60)),
    case("Divide", fixed([1.0, -1.0, 0.0, 0.0, 1.0]), fixed([0.0, 0.0, 0.0, -0.0, -0.0]), label="f32_by_zero",
         expect=_np2(np.divide)),
    case("Power", fixed([0.0, -2.0, -8.0, 2.0, 0.0, 1.0]), fixed([0.0, 0.5, 3.0, -1.0, -1.0, np.inf]),
         label="f32_domain_ends", expect=_np2(np.power)),
    case("Multiply", fixed([1e38, -1e38, 1e-38]), fixed([10.0, 10.0, 1e-10]), label="f32_overflow_underflow",
         expect=_np2(np.multiply)),
    case("Maximum", fixed([np.nan, 1.0, np.nan]), fixed([1.0, np.nan, np.nan]), label="f32_nan_either_side",
         expect=_np2(np.maximum)),
    case("Minimum", fixed([np.nan, 1.0, np.nan]), fixed([1.0, np.nan, np.nan]), label="f32_nan_either_side",
         expect=_np2(np.minimum)),
]

# every pair of special values in f16 storage too
for _op in ("Add", "Multiply", "Divide", "Maximum", "Minimum"):
    _fn = BINARY[_op][2]
    if _fn is not None:
        CASES.append(case(_op, *special_pairs("f16"), label="f16_special", expect=_np2(_fn), rtol=1e-3, atol=1e-3))

# u64 arithmetic
CASES += [case("Add", tensor(3, 4, dtype="u64", low=0, high=2**40), tensor(3, 4, dtype="u64", low=0, high=2**40))]
