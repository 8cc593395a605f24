"""Element conversions with OpenVINO's semantics, shared by ``Convert``/``ConvertLike`` and by the
operations that evaluate a floating-point function on any numeric type (``Sin`` of an ``i32``).

OpenVINO converts with C++ ``static_cast`` on x86. Its specification leaves out-of-range results
undefined; the references here reproduce what OpenVINO's reference does on x86 so that constant
folding gives the numbers OpenVINO gives, rather than whatever NumPy's casts happen to produce.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import ml_dtypes
import numpy as np

from opforge.element_type import Type

_I32_MIN = -(2**31)
_I64_MIN = -(2**63)


def is_float_dtype(dtype: np.dtype[Any]) -> bool:
    """True for f16, bf16, f32, f64 (``bf16`` is not of NumPy kind ``'f'``)."""
    return Type.from_numpy(dtype).is_float


def finfo(dtype: np.dtype[Any]) -> Any:
    """``np.finfo`` that also knows ``bfloat16``."""
    return ml_dtypes.finfo(dtype) if dtype == np.dtype(ml_dtypes.bfloat16) else np.finfo(dtype)


def float_to_integer(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """Float values to an integer type as x86 C++ ``static_cast`` does: truncation toward zero;
    a value that does not fit the 32-bit (64-bit for 64-bit targets) conversion instruction, and
    NaN, becomes that instruction's "integer indefinite" (the minimum integer); narrower targets
    then keep the low bits (wrap around)."""
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):
        t = np.trunc(np.asarray(x, dtype=np.float64))
        if dt == np.uint64:
            # Values in [2**63, 2**64) fit uint64 exactly; negatives go through int64 and wrap.
            out = np.full(t.shape, 2**63, dtype=np.uint64)
            big = (t >= 0) & (t < 2.0**64)
            out[big] = t[big].astype(np.uint64)
            neg = (t < 0) & (t >= -(2.0**63))
            out[neg] = t[neg].astype(np.int64).astype(np.uint64)
            return out
        if dt in (np.dtype(np.int64), np.dtype(np.uint32)):
            # uint32 targets are converted through a 64-bit integer by compilers.
            ok = (t >= -(2.0**63)) & (t < 2.0**63)
            wide = np.where(ok, t, float(_I64_MIN)).astype(np.int64)
            return wide.astype(dt)
        ok = (t >= -(2.0**31)) & (t < 2.0**31)
        wide = np.where(ok, t, float(_I32_MIN)).astype(np.int64)
        return wide.astype(dt)


def convert_array(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """``Convert``: any element type to any other. Integers wrap modulo 2**N, floats go to
    integers by :func:`float_to_integer`, anything non-zero (NaN included) is ``true``."""
    src = np.asarray(x)
    dt = np.dtype(dtype)
    if src.dtype == dt:
        return src.copy()
    if dt == np.bool_:
        if is_float_dtype(src.dtype):
            return src.astype(np.float32) != 0
        return src != 0
    if src.dtype == np.bool_:
        src = src.astype(np.uint8)
    src_float = is_float_dtype(src.dtype)
    if src_float and not is_float_dtype(dt):
        return float_to_integer(src.astype(np.float64), dt)
    with np.errstate(all="ignore"):
        return src.astype(dt)


def round_half_away_from_zero(x: np.ndarray) -> np.ndarray:
    """C's ``round``: halves go away from zero. ``x - trunc(x)`` is exact, so no value just below
    a half is pushed over it by the addition a ``floor(x + 0.5)`` formula would do."""
    with np.errstate(all="ignore"):
        whole = np.trunc(x)
        frac = x - whole
        return np.where(np.abs(frac) >= 0.5, whole + np.sign(x), whole)


def apply_float_fn(
    x: np.ndarray,
    fn: Callable[[np.ndarray], np.ndarray],
    integer_result: Literal["round", "trunc"] = "round",
) -> np.ndarray:
    """``fn`` of a float, applied to a tensor of any numeric type, returned in the input's type.

    f16/bf16 are computed in f32 (NumPy lacks many functions for them, and OpenVINO's devices
    compute them in f32 too). Integer tensors are computed in f64 and rounded as the OpenVINO
    specification says ("rounded half up to the nearest integer" for Sqrt, Tanh...), which is
    also what OpenVINO's CPU device does for every such operation.
    """
    with np.errstate(all="ignore"):
        if is_float_dtype(x.dtype):
            work = x if x.dtype in (np.dtype(np.float32), np.dtype(np.float64)) else x.astype(np.float32)
            return np.asarray(fn(work)).astype(x.dtype)
        y = np.asarray(fn(x.astype(np.float64)), dtype=np.float64)
        y = round_half_away_from_zero(y) if integer_result == "round" else np.trunc(y)
        return float_to_integer(y, x.dtype)


def erf(x: np.ndarray) -> np.ndarray:
    """The Gauss error function (NumPy has none), accurate to double precision."""
    flat = np.asarray(x, dtype=np.float64).reshape(-1)
    out = np.fromiter((math.erf(v) for v in flat), dtype=np.float64, count=flat.size)
    return out.reshape(np.shape(x)).astype(np.asarray(x).dtype)


def apply_binary(
    a: np.ndarray, b: np.ndarray, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> np.ndarray:
    """``fn(a, b)`` in the inputs' type: integers directly (exact), f16/bf16 through f32."""
    with np.errstate(all="ignore"):
        if is_float_dtype(a.dtype) and a.dtype.itemsize < 4:
            return np.asarray(fn(a.astype(np.float32), b.astype(np.float32))).astype(a.dtype)
        return np.asarray(fn(a, b))
