"""StridedSlice-1: NumPy-style basic indexing driven by begin/end/stride vectors and bit masks.

Note OpenVINO's mask convention: a set ``begin_mask``/``end_mask`` bit *ignores* the begin/end
value (the slice starts/ends at the edge), the opposite of TensorFlow. Where several masks set
the same bit, ellipsis wins over new_axis, which wins over shrink_axis.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import (
    ShapeError,
    const_ints,
    infer_errors,
    ints,
    slice_length,
    vector_inputs_length,
)
from opforge.shape import Dim, PartialShape


class StridedSliceAttrs(OpAttrs):
    begin_mask: list[int]
    end_mask: list[int]
    new_axis_mask: list[int] = []
    shrink_axis_mask: list[int] = []
    ellipsis_mask: list[int] = []


@dataclasses.dataclass(frozen=True)
class _Entry:
    """One position of the begin/end/stride vectors, resolved against the masks.

    ``begin``/``end`` are None where masked (the slice runs to the edge); ``known`` is False
    when the values come from a non-constant input."""

    kind: Literal["ellipsis", "new", "shrink", "slice"]
    begin: int | None = None
    end: int | None = None
    stride: int = 1
    known: bool = True


def _bit(mask: Sequence[int], i: int) -> bool:
    return i < len(mask) and mask[i] != 0


def plan_entries(
    a: StridedSliceAttrs,
    n: int,
    begin: Sequence[int] | None,
    end: Sequence[int] | None,
    stride: Sequence[int] | None,
) -> list[_Entry]:
    """The entries of the index expression; value lists may be None when unknown."""
    for name, v in (("begin", begin), ("end", end), ("stride", stride)):
        if v is not None and len(v) != n:
            raise ShapeError(f"begin, end and stride must have the same length; {name} has {len(v)}, not {n}")
    if sum(_bit(a.ellipsis_mask, i) for i in range(n)) > 1:
        raise ShapeError(f"ellipsis_mask {a.ellipsis_mask} sets more than one ellipsis")
    entries: list[_Entry] = []
    for i in range(n):
        if _bit(a.ellipsis_mask, i):
            entries.append(_Entry("ellipsis"))
        elif _bit(a.new_axis_mask, i):
            entries.append(_Entry("new"))
        elif _bit(a.shrink_axis_mask, i):
            entries.append(
                _Entry("shrink", begin=None if begin is None else begin[i], known=begin is not None)
            )
        else:
            s = 1 if stride is None else stride[i]
            if s == 0:
                raise ShapeError(f"stride must not be 0 (position {i})")
            b_masked, e_masked = _bit(a.begin_mask, i), _bit(a.end_mask, i)
            known = stride is not None and (b_masked or begin is not None) and (e_masked or end is not None)
            entries.append(
                _Entry(
                    "slice",
                    begin=None if b_masked or begin is None else begin[i],
                    end=None if e_masked or end is None else end[i],
                    stride=s,
                    known=known,
                )
            )
    return entries


def _expand(entries: list[_Entry], rank: int) -> list[_Entry]:
    """Entries with the ellipsis replaced by full slices, one per input dimension."""
    consumed = sum(e.kind in ("shrink", "slice") for e in entries)
    if consumed > rank:
        raise ShapeError(f"begin/end index {consumed} dimensions but the data has rank {rank}")
    out: list[_Entry] = []
    for e in entries:
        if e.kind == "ellipsis":
            out.extend(_Entry("slice") for _ in range(rank - consumed))
        else:
            out.append(e)
    if not any(e.kind == "ellipsis" for e in entries):
        out.extend(_Entry("slice") for _ in range(rank - consumed))
    return out


def strided_slice_shape(data: PartialShape, entries: list[_Entry]) -> PartialShape:
    if data.rank is None:
        return PartialShape.dynamic()
    dims: list[Dim] = []
    k = 0  # the input dimension the next consuming entry applies to
    for e in _expand(entries, data.rank):
        if e.kind == "new":
            dims.append(1)
            continue
        d = data.dims[k]
        k += 1
        if e.kind == "shrink":
            if e.known and d is not None and e.begin is not None and not -d <= e.begin < d:
                raise ShapeError(
                    f"shrink_axis index {e.begin} is out of range for dimension {k - 1} of size {d}"
                )
        elif not e.known or d is None:
            dims.append(None)
        else:
            dims.append(slice_length(e.begin, e.end, e.stride, d))
    return PartialShape(dims)


class StridedSlice(Op):
    type_name = "StridedSlice"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    value_inputs = (1, 2, 3)
    version = "opset1"
    Attrs = StridedSliceAttrs
    min_inputs = 3
    max_inputs = 4

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: StridedSliceAttrs = ctx.attrs  # type: ignore[assignment]
        n = vector_inputs_length(ctx, ("begin", "end", "stride"))
        t = ctx.input_type(0)
        data = ctx.input_shape(0)
        begin, end = const_ints(ctx, 1), const_ints(ctx, 2)
        stride = const_ints(ctx, 3) if ctx.num_inputs > 3 else None
        if n is None:
            n = next((len(v) for v in (begin, end, stride) if v is not None), None)
        if data.rank is None:
            return [TensorSpec(t, PartialShape.dynamic())]
        if n is None:
            special = any(any(m) for m in (a.new_axis_mask, a.shrink_axis_mask, a.ellipsis_mask))
            # Without new or removed axes only the sizes change.
            return [TensorSpec(t, PartialShape.dynamic(None if special else data.rank))]
        if ctx.num_inputs <= 3:
            stride = [1] * n
        with infer_errors(ctx):
            entries = plan_entries(a, n, begin, end, stride)
            return [TensorSpec(t, strided_slice_shape(data, entries))]

    @classmethod
    def evaluate(cls, attrs: StridedSliceAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        begin, end = ints(inputs[1]), ints(inputs[2])
        stride = ints(inputs[3]) if len(inputs) > 3 else [1] * len(begin)
        entries = plan_entries(attrs, len(begin), begin, end, stride)
        strided_slice_shape(PartialShape(x.shape), entries)  # validates shrink indices
        index: list[Any] = []
        for e in entries:
            if e.kind == "ellipsis":
                index.append(Ellipsis)
            elif e.kind == "new":
                index.append(None)
            elif e.kind == "shrink":
                index.append(e.begin)
            else:
                index.append(slice(e.begin, e.end, e.stride))
        return [np.asarray(x[tuple(index)])]
