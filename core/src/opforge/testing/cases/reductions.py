"""Reductions over constant axes (one, several, negative, with and without ``keep_dims``),
CumSum and TopK. Special values: a NaN anywhere in a reduced slice makes Max/Min/Sum/Mean NaN."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from opforge.testing.cases import OpCase, case
from opforge.testing.models import const, fixed, tensor

_NAN_ROWS = np.array([[1.0, np.nan, 3.0, -1.0], [2.0, 5.0, -np.inf, 0.5], [np.inf, 1.0, 2.0, 3.0],
                      [np.nan, np.inf, -np.inf, 0.0]], dtype=np.float32)


def _rows(fn: Callable[..., Any]) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    def expect(xs: list[np.ndarray]) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [np.asarray(fn(xs[0], axis=1)).astype(xs[0].dtype)]
    return expect


REDUCE: dict[str, tuple[tuple[float, float], Callable[..., Any] | None]] = {"ReduceSum": ((-2, 2), np.sum), "ReduceMean": ((-2, 2), np.mean), "ReduceMax": ((-2, 2), np.max),
          "ReduceMin": ((-2, 2), np.min), "ReduceProd": ((0.5, 1.5), np.prod), "ReduceL1": ((-2, 2), None),
          "ReduceL2": ((-2, 2), None)}

CASES: list[OpCase] = []
for _op, ((_lo, _hi), _fn) in REDUCE.items():
    _X = tensor(2, 3, 4, 5, low=_lo, high=_hi)
    CASES += [
        case(_op, _X, const([1]), keep_dims=False, rtol=1e-5, atol=1e-5),
        case(_op, _X, const([1]), keep_dims=True, label="f32_axis1_keep", rtol=1e-5, atol=1e-5),
        case(_op, _X, const([0, 2, 3]), keep_dims=False, label="f32_axes023", rtol=1e-5, atol=1e-5),
        case(_op, _X, const([-1]), keep_dims=True, label="f32_last_keep", rtol=1e-5, atol=1e-5),
        case(_op, tensor(4, 33, dtype="f16", low=_lo, high=_hi), const([1]), rtol=5e-3, atol=5e-3),
    ]
    if _fn is not None:
        CASES.append(case(_op, fixed(_NAN_ROWS), const([1]), label="f32_special", expect=_rows(_fn)))
for _op in ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"):
    CASES.append(case(_op, tensor(3, 4, 5, dtype="i32", low=-3, high=3), const([2])))
CASES.append(case("ReduceSum", tensor(3, 4, dtype="i64", low=-50, high=50), const([0, 1]), label="i64_all"))

for _op in ("ReduceLogicalAnd", "ReduceLogicalOr"):
    CASES += [
        case(_op, tensor(3, 4, 5, dtype="boolean"), const([1])),
        case(_op, tensor(3, 4, 5, dtype="boolean"), const([0, 2]), keep_dims=True, label="boolean_keep"),
    ]

CASES += [
    case("CumSum", tensor(3, 4, 5), const(1)),
    case("CumSum", tensor(3, 4, 5), const(-1), exclusive=True, reverse=True, label="f32_exclusive_reverse"),
    case("CumSum", tensor(3, 4, 5), label="f32_default_axis"),
    case("CumSum", tensor(3, 6, dtype="i32", low=-9, high=9), const(1, "i32"), reverse=True),
    # random floats: no ties, so the indices are determined
    case("TopK", tensor(3, 10), const(4), axis=1, mode="max", sort="value"),
    case("TopK", tensor(3, 10, 2), const(3), axis=1, mode="min", sort="value", label="f32_min"),
    case("TopK", tensor(3, 10), const(4), axis=-1, mode="max", sort="index", label="f32_sort_index"),
    case("TopK", tensor(4, 6, dtype="i32", low=-1000, high=1000), const(2), axis=0, mode="max", sort="value",
         index_element_type="i64", label="i32_axis0_i64_index"),
]

# edges: empty inputs (a sum of nothing is 0, a product 1), a NaN first or last in its slice
CASES += [
    case("ReduceSum", tensor(3, 0), const([1]), label="f32_empty_slices"),
    case("ReduceProd", tensor(3, 0), const([1]), label="f32_empty_slices"),
    case("ReduceMin", fixed([[np.nan, 1.0, 2.0], [2.0, 1.0, np.nan]]), const([1]), label="f32_nan_first_last",
         expect=_rows(np.min)),
    case("ReduceMean", tensor(2, 3, dtype="i32", low=-9, high=9), const([1])),
    case("ReduceSum", tensor(3, 4, 33, dtype="f64"), const([2]), rtol=1e-12, atol=1e-12),
]

# CumSum in f64 along the last axis, reversed and exclusive
CASES += [
    case("CumSum", tensor(3, 4, 5, dtype="f64"), const(-1), exclusive=True, reverse=True, label="f64_last_excl_rev",
         rtol=1e-12, atol=1e-12),
]
CASES += [case("ReduceMax", tensor(3, 4, dtype="f64"), const([1]), keep_dims=False, label="f64_axis1")]
