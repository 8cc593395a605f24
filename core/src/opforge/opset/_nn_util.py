"""Helpers shared by the neural-network operations: element-type checks, axis handling, reading
constant inputs, and the arithmetic dtype of the NumPy references."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from opforge.element_type import Type
from opforge.op import InferContext
from opforge.opset._elementwise import check_type_class
from opforge.shape import Dim, PartialShape


def lower_enum(v: Any) -> Any:
    """``field_validator(mode="before")`` body for enum-like strings: OpenVINO writes some of them
    in upper case (``eps_mode="INSIDE_SQRT"``) and its Python API passes ``"EXPLICIT"``."""
    return v.lower() if isinstance(v, str) else v


def parse_type(v: Any) -> Type:
    """``field_validator(mode="before")`` body for element-type attributes (``"i32"``, ``"I32"``,
    ``np.int32``...)."""
    return Type.parse(v)


def check_index_element_type(ctx: InferContext, t: Type) -> None:
    """The ``index_element_type`` of the ops that output indices (TopK, MaxPool...): i32 or i64."""
    if t not in (Type.i32, Type.i64):
        raise ctx.error(f"index_element_type is {t.ir}, expected i32 or i64")


def same_type(ctx: InferContext, inputs: Sequence[tuple[int, str]], accepts: str = "numeric") -> Type:
    """The common element type of the given (index, name) inputs; raises when two differ or the
    type is not of the ``accepts`` class (see ``check_type_class``)."""
    t = Type.dynamic
    first = f"input {inputs[0][0]} ({inputs[0][1]})"
    for i, name in inputs:
        ti = ctx.input_type(i)
        if ti is Type.dynamic:
            continue
        if t is Type.dynamic:
            t, first = ti, f"input {i} ({name})"
        elif ti != t:
            raise ctx.error(f"input {i} ({name}) has element type {ti}, expected {t} (the type of {first})")
    check_type_class(ctx, t, accepts, first)
    return t


def check_integral(ctx: InferContext, i: int, name: str) -> None:
    t = ctx.input_type(i)
    if t is not Type.dynamic and not t.is_integral:
        raise ctx.error(f"input {i} ({name}) has element type {t}, expected an integer type")


def check_rank(ctx: InferContext, i: int, name: str, ranks: Sequence[int]) -> None:
    """Raise unless input ``i`` has dynamic rank or one of ``ranks``."""
    r = ctx.input_shape(i).rank
    if r is not None and r not in ranks:
        names = [str(x) for x in ranks]
        want = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        raise ctx.error(f"input {i} ({name}) has rank {r}, expected {want}")


def normalize_axis(ctx: InferContext, axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[-rank, rank - 1]`` as a non-negative index."""
    if not -rank <= axis < rank:
        raise ctx.error(f"{what} {axis} is out of range [{-rank}, {rank - 1}] for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_axes(ctx: InferContext, axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
    out = [normalize_axis(ctx, int(a), rank, f"{what} value") for a in axes]
    if len(set(out)) != len(out):
        raise ctx.error(f"{what} {list(axes)} repeat an axis")
    return out


def data_and_axes(ctx: InferContext, axes_ranks: Sequence[int]) -> tuple[Type, PartialShape, list[int] | None]:
    """Checks of the ops normalising float input 0 (data) over the axes in integer input 1
    (MVN, NormalizeL2, LRN), which has one of ``axes_ranks``. Returns the data's type and shape and
    the axes when they are a constant (see :func:`check_axes`)."""
    t = same_type(ctx, [(0, "data")], "float")
    check_integral(ctx, 1, "axes")
    check_rank(ctx, 1, "axes", axes_ranks)
    return t, ctx.input_shape(0), const_ints(ctx, 1)


def check_axes(ctx: InferContext, axes: list[int] | None, data: PartialShape) -> None:
    """Constant ``axes`` (input 1) must be in range for the data's rank and not repeat."""
    if data.rank is not None and axes is not None:
        normalize_axes(ctx, axes, data.rank, "input 1 (axes)")


def wrap_axes(axes: np.ndarray, ndim: int) -> tuple[int, ...]:
    """The values of an axes input mapped to ``[0, ndim)`` (inference has checked their range)."""
    return tuple(int(v) % ndim for v in np.asarray(axes).reshape(-1))


def const_ints(ctx: InferContext, i: int) -> list[int] | None:
    """The value of integer input ``i`` as a flat list when it is a constant, else None."""
    v = ctx.input_value(i)
    if v is None:
        return None
    return [int(x) for x in np.asarray(v).reshape(-1)]


def merge_dim(ctx: InferContext, a: Dim, b: Dim, what: str) -> Dim:
    """The dimension both ``a`` and ``b`` describe; raises when they are different numbers."""
    if a is not None and b is not None and a != b:
        raise ctx.error(f"{what}: {a} vs {b}")
    return a if a is not None else b


def work_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype a reference computes in: f16 and bf16 widen to float32 (NumPy has no fast half
    kernels and accumulating in half loses precision OpenVINO's plugins do not lose), integers to
    float64 (exact for every product that fits in 53 bits), f32 and f64 stay."""
    if dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        return np.dtype(np.float32)
    if dtype.kind in "iub":
        return np.dtype(np.float64)
    return dtype


def to_work(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(work_dtype(np.asarray(x).dtype), copy=False)


def cast_to(y: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """``y`` in the output element type; integer outputs truncate toward zero like a C++ cast."""
    y = np.asarray(y)
    if y.dtype == dtype:
        return y
    if dtype.kind in "iu" and y.dtype.kind == "f":
        info = np.iinfo(dtype)
        y = np.clip(np.trunc(np.nan_to_num(y)), info.min, info.max)
    return y.astype(dtype)


def lowest(dtype: np.dtype[Any]) -> Any:
    """The smallest finite value of ``dtype`` (what OpenVINO's max-reductions start from)."""
    if dtype.kind == "f" or dtype == np.dtype(ml_dtypes.bfloat16):
        return ml_dtypes.finfo(dtype).min
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return False
