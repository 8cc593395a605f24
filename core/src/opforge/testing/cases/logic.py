"""Comparisons, logical and bitwise ops, Select, and the IsNaN/IsInf/IsFinite tests.

Comparisons run on integer-valued inputs (so ties, where ``Equal``/``LessEqual`` matter, occur)
and on every pair of IEEE special values (a NaN compares unequal to everything)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from opforge.testing.cases import OpCase, case
from opforge.testing.models import fixed, special, special_pairs, tensor


def _np(fn: Callable[..., np.ndarray]) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    def expect(xs: list[np.ndarray]) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [np.asarray(fn(*xs))]
    return expect


COMPARE = {"Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less, "LessEqual": np.less_equal,
           "Greater": np.greater, "GreaterEqual": np.greater_equal}

CASES: list[OpCase] = []
for _op, _fn in COMPARE.items():
    CASES += [
        case(_op, tensor(3, 4, dtype="i32", low=-2, high=2), tensor(3, 4, dtype="i32", low=-2, high=2)),
        case(_op, tensor(2, 3, 4), tensor(4)),
        case(_op, tensor(3, 4, dtype="i64", low=-2, high=2), tensor(1, 4, dtype="i64", low=-2, high=2)),
        case(_op, *special_pairs(), label="f32_special", expect=_np(_fn)),
    ]
CASES.append(case("Equal", tensor(3, 4, dtype="boolean"), tensor(3, 4, dtype="boolean")))

for _op in ("LogicalAnd", "LogicalOr", "LogicalXor"):
    CASES += [
        case(_op, tensor(3, 4, dtype="boolean"), tensor(3, 4, dtype="boolean")),
        case(_op, tensor(2, 3, 4, dtype="boolean"), tensor(4, dtype="boolean")),
    ]
CASES.append(case("LogicalNot", tensor(3, 5, dtype="boolean")))

for _op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
    CASES += [
        case(_op, tensor(3, 4, dtype="i32", low=-1000, high=1000), tensor(3, 4, dtype="i32", low=-1000, high=1000)),
        case(_op, tensor(3, 4, dtype="u8", low=0, high=255), tensor(4, dtype="u8", low=0, high=255)),
        case(_op, tensor(3, 4, dtype="boolean"), tensor(3, 4, dtype="boolean")),
    ]
CASES += [
    case("BitwiseNot", tensor(3, 4, dtype="i32", low=-1000, high=1000)),
    case("BitwiseNot", tensor(3, 4, dtype="u8", low=0, high=255)),
    case("BitwiseNot", tensor(3, 4, dtype="boolean")),
]
for _op in ("BitwiseLeftShift", "BitwiseRightShift"):
    CASES += [
        case(_op, tensor(3, 4, dtype="i32", low=-1000, high=1000), tensor(3, 4, dtype="i32", low=0, high=8)),
        case(_op, tensor(3, 4, dtype="u8", low=0, high=255), tensor(3, 4, dtype="u8", low=0, high=7)),
    ]

CASES += [
    case("Select", tensor(2, 3, 4, dtype="boolean"), tensor(2, 3, 4), tensor(2, 3, 4)),
    case("Select", tensor(3, 1, dtype="boolean"), tensor(2, 3, 4), tensor(4)),
    case("Select", tensor(2, 3, dtype="boolean"), tensor(2, 3, dtype="i32", low=-9, high=9),
         tensor(2, 3, dtype="i32", low=-9, high=9)),
    case("IsNaN", special(), expect=_np(np.isnan)),
    case("IsFinite", special(), expect=_np(np.isfinite)),
    case("IsInf", special(), expect=_np(np.isinf)),
    case("IsInf", special(), label="f32_special_positive", detect_negative=False, expect=_np(np.isposinf)),
    case("IsInf", special(), label="f32_special_negative", detect_positive=False, expect=_np(np.isneginf)),
    case("IsNaN", tensor(3, 5, dtype="f16")),
]

# the other integer widths (8-, 16-, 32- and 64-bit, signed and unsigned) and the f64 value tests
for _op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
    CASES += [
        case(_op, tensor(3, 4, dtype="i8", low=-128, high=127), tensor(3, 4, dtype="i8", low=-128, high=127)),
        case(_op, tensor(3, 4, dtype="u64", low=0, high=2**40), tensor(4, dtype="u64", low=0, high=2**40)),
    ]
CASES += [
    case("BitwiseNot", tensor(3, 4, dtype="i16", low=-1000, high=1000)),
    case("BitwiseNot", tensor(3, 4, dtype="u32", low=0, high=2**31)),
    case("BitwiseNot", tensor(3, 4, dtype="i64", low=-2**40, high=2**40)),
    case("BitwiseLeftShift", tensor(3, 4, dtype="u64", low=0, high=2**20), tensor(3, 4, dtype="u64", low=0, high=40)),
    case("BitwiseRightShift", tensor(3, 4, dtype="u64", low=0, high=2**50), tensor(3, 4, dtype="u64", low=0, high=63)),
    case("IsNaN", special("f64"), expect=_np(np.isnan)),
    case("IsFinite", special("f64"), expect=_np(np.isfinite)),
    case("IsInf", special("f64"), expect=_np(np.isinf)),
    case("IsInf", special("f64"), label="f64_special_positive", detect_negative=False, expect=_np(np.isposinf)),
]
# shift amounts at and beyond the element width
for _op in ("BitwiseLeftShift", "BitwiseRightShift"):
    CASES += [
        case(_op, fixed([1, -8, 5, 255, 3, 7], "i32"), fixed([0, 1, 3, 7, 32, 40], "i32"), label="i32_overshift"),
        case(_op, fixed([1, 200, 5, 255, 3, 7], "u8"), fixed([0, 1, 3, 7, 9, 40], "u8"), label="u8_overshift"),
    ]
