"""Shared helpers of the shape and data-movement operations: reading shape-like inputs
(axes, target shapes, begin/end vectors), normalizing axes and checking index ranges.

Shape arithmetic lives in plain functions that raise :class:`ShapeError`, so that one
implementation serves both ``infer`` (where :func:`infer_errors` turns the error into a
``ShapeInferenceError`` naming the node) and ``evaluate`` (where the reference runner wraps it
into a ``KernelError`` naming the node).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, OpAttrs
from opforge.shape import Dim, PartialShape


class ShapeError(ValueError):
    """A bad shape, axis or index value; the message says which and why."""


@contextmanager
def infer_errors(ctx: InferContext) -> Iterator[None]:
    """Re-raise :class:`ShapeError` from shape arithmetic as the node's inference error."""
    try:
        yield
    except ShapeError as err:
        raise ctx.error(str(err)) from None


# --- attributes ----------------------------------------------------------------------------
def index_type(v: Any, name: str = "") -> Type:
    """An element-type attribute of shapes or indices: i32 or i64, else a ValueError (naming the
    attribute ``name`` when given)."""
    t = Type.parse(v)
    if t not in (Type.i32, Type.i64):
        raise ValueError(f"{name + ' ' if name else ''}must be i32 or i64, got {t.ir}")
    return t


class OutputTypeAttrs(OpAttrs):
    """``output_type``: the element type of a shape or index output, i32 or i64 (the default)."""

    output_type: Type = Type.i64

    @field_validator("output_type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Type:
        return index_type(v, "output_type")


# --- input checks --------------------------------------------------------------------------
def check_integral(ctx: InferContext, i: int, what: str) -> None:
    t = ctx.input_type(i)
    if t is not Type.dynamic and not t.is_integral:
        raise ctx.error(f"{what} (input {i}) has element type {t}, expected an integer type")


def check_index_type(ctx: InferContext, i: int, what: str) -> None:
    """Indices of the gather/scatter family are i32 or i64."""
    t = ctx.input_type(i)
    if t not in (Type.dynamic, Type.i32, Type.i64):
        raise ctx.error(f"{what} (input {i}) has element type {t}, expected int32 or int64")


def check_rank(ctx: InferContext, i: int, what: str, ranks: Sequence[int]) -> None:
    r = ctx.input_shape(i).rank
    if r is not None and r not in ranks:
        want = " or ".join(str(x) for x in ranks)
        raise ctx.error(f"{what} (input {i}) must have rank {want}, got shape {ctx.input_shape(i)}")


def check_scalar_like(ctx: InferContext, i: int, what: str) -> None:
    """A scalar, or a 1-D tensor of one element (OpenVINO accepts both for axis-like inputs)."""
    s = ctx.input_shape(i)
    if s.rank is None or s.rank == 0:
        return
    if s.rank == 1 and s.dims[0] in (None, 1):
        return
    raise ctx.error(f"{what} (input {i}) must be a scalar or hold one element, got shape {s}")


def axis_input(ctx: InferContext, i: int) -> int | None:
    """Checks input ``i`` (``axis``): an integer scalar or one-element vector. Its value when it
    is a constant, else None."""
    check_integral(ctx, i, "axis")
    check_scalar_like(ctx, i, "axis")
    v = const_ints(ctx, i)
    return None if v is None else v[0]


def vector_inputs_length(ctx: InferContext, names: Sequence[str]) -> int | None:
    """Checks inputs 1, 2, ... (named ``names``, which lists every optional one too): 1-D integer
    vectors of one length. That length, when a shape tells it."""
    lengths: set[int] = set()
    for i in range(1, ctx.num_inputs):
        check_integral(ctx, i, names[i - 1])
        check_rank(ctx, i, names[i - 1], (1,))
        n = vector_length(ctx.input_shape(i))
        if n is not None:
            lengths.add(n)
    if len(lengths) > 1:
        raise ctx.error(
            f"{', '.join(names[:-1])} and {names[-1]} must have the same length, got shapes "
            + ", ".join(str(ctx.input_shape(i)) for i in range(1, ctx.num_inputs))
        )
    return next(iter(lengths), None)


def same_types(ctx: InferContext, indices: Sequence[int], what: str) -> Type:
    """The common element type of several inputs (dynamic ones match anything)."""
    found = Type.dynamic
    for i in indices:
        t = ctx.input_type(i)
        if t is Type.dynamic:
            continue
        if found is not Type.dynamic and t != found:
            raise ctx.error(f"{what}: element types differ ({found} and {t})")
        found = t
    return found


def const_ints(ctx: InferContext, i: int) -> list[int] | None:
    """The values of a constant integer input, flattened; None when not known."""
    if i >= ctx.num_inputs:
        return None
    v = ctx.input_value(i)
    return None if v is None else ints(v)


def ints(a: np.ndarray) -> list[int]:
    return [int(x) for x in np.asarray(a).reshape(-1)]


def scalar_int(a: np.ndarray, what: str) -> int:
    flat = np.asarray(a).reshape(-1)
    if flat.size != 1:
        raise ShapeError(f"{what} must hold exactly one value, got {flat.size}")
    return int(flat[0])


def vector_length(shape: PartialShape) -> int | None:
    """The number of elements of a 1-D (or scalar) shape-like input, when known."""
    if shape.rank is None:
        return None
    if shape.rank == 0:
        return 1
    if shape.rank == 1:
        return shape.dims[0]
    return None


# --- axes ------------------------------------------------------------------------------------
def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[-rank, rank)`` mapped to ``[0, rank)``."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} is out of range for rank {rank} (expected {-rank}..{rank - 1})")
    return axis + rank if axis < 0 else axis


def normalize_axes(axes: Iterable[int], rank: int, what: str = "axis", unique: bool = False) -> list[int]:
    out = [normalize_axis(a, rank, what) for a in axes]
    if unique and len(set(out)) != len(out):
        raise ShapeError(f"{what} values must be unique, got {list(axes)}")
    return out


# --- dimensions ------------------------------------------------------------------------------
def dims_product(dims: Iterable[Dim]) -> int | None:
    """Product of dimensions; 0 when any is a static 0 (whatever the others), None if unknown."""
    total: int | None = 1
    for d in dims:
        if d == 0:
            return 0
        if d is None or total is None:
            total = None
        else:
            total *= d
    return total


def merge_dim(a: Dim, b: Dim, what: str) -> Dim:
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise ShapeError(f"{what}: {a} vs {b}")


def slice_length(start: int | None, stop: int | None, step: int, dim: int) -> int:
    """Length of ``range(dim)[start:stop:step]``, with Python/NumPy clamping of start and stop."""
    return len(range(*slice(start, stop, step).indices(dim)))


def broadcast_dims(a: PartialShape, b: PartialShape, what: str) -> PartialShape:
    """NumPy broadcast of two partial shapes; an error names ``what``."""
    try:
        return numpy_broadcast(a, b)
    except ShapeError as err:
        raise ShapeError(f"{what}: {err}") from None


def numpy_broadcast(a: PartialShape, b: PartialShape) -> PartialShape:
    """NumPy broadcast of two partial shapes (a dynamic rank gives a dynamic rank)."""
    if a.rank is None or b.rank is None:
        return PartialShape.dynamic()
    n = max(a.rank, b.rank)
    da = [1] * (n - a.rank) + list(a.dims)
    db = [1] * (n - b.rank) + list(b.dims)
    out: list[Dim] = []
    for i, (x, y) in enumerate(zip(da, db)):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            # An unknown dimension against a static one (not 1) can only be 1 or equal to it at
            # run time; either way the result is the static one.
            out.append(y if x is None else x)
        elif x == y:
            out.append(x)
        else:
            raise ShapeError(f"shapes {a} and {b} cannot be broadcast (dimension {i}: {x} vs {y})")
    return PartialShape(out)


# --- data-dependent indices ------------------------------------------------------------------
def check_indices(indices: np.ndarray, size: int, what: str, allow_negative: bool = True) -> np.ndarray:
    """Indices as int64 with negatives wrapped; raises naming the first index out of range."""
    idx = np.asarray(indices).astype(np.int64, copy=False)
    low = -size if allow_negative else 0
    bad = (idx < low) | (idx >= size)
    if bad.any():
        pos = tuple(int(p) for p in np.argwhere(bad)[0])
        where = f" at position {pos}" if idx.ndim else ""
        raise ShapeError(
            f"{what} {int(idx[pos])}{where} is out of range for a dimension of size {size} "
            f"(expected {low}..{size - 1})"
        )
    return np.where(idx < 0, idx + size, idx)


def last_wins(linear: np.ndarray) -> np.ndarray:
    """Positions of ``linear`` to keep so that, of repeated targets, the last write wins
    (OpenVINO applies updates in order)."""
    n = linear.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    _, first_in_reversed = np.unique(linear[::-1], return_index=True)
    return np.sort(n - 1 - first_in_reversed)


def ceil_div(a: int, b: int) -> int:
    """Exact ``ceil(a / b)`` for integers of any size and sign."""
    return -((-a) // b)
