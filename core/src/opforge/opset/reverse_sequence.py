"""ReverseSequence-1: for each batch element ``b``, reverse the first ``seq_lengths[b]``
elements along ``seq_axis`` (a length of 0 leaves the sequence as it is, like 1)."""

from __future__ import annotations

import numpy as np

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import ShapeError, check_rank, infer_errors, merge_dim, normalize_axis
from opforge.shape import PartialShape


class ReverseSequenceAttrs(OpAttrs):
    batch_axis: int = 0
    seq_axis: int = 1


def _axes(a: ReverseSequenceAttrs, rank: int) -> tuple[int, int]:
    if rank < 2:
        raise ShapeError(f"data must have rank 2 or more, got rank {rank}")
    b = normalize_axis(a.batch_axis, rank, "batch_axis")
    s = normalize_axis(a.seq_axis, rank, "seq_axis")
    if b == s:
        raise ShapeError(f"batch_axis ({a.batch_axis}) and seq_axis ({a.seq_axis}) name the same dimension")
    return b, s


class ReverseSequence(Op):
    type_name = "ReverseSequence"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    #: the sequence lengths decide where each element goes, as a permutation would
    value_inputs = (1,)
    version = "opset1"
    Attrs = ReverseSequenceAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ReverseSequenceAttrs = ctx.attrs  # type: ignore[assignment]
        lt = ctx.input_type(1)
        if lt is Type.boolean:
            raise ctx.error(f"seq_lengths (input 1) must be numeric, got {lt}")
        check_rank(ctx, 1, "seq_lengths", (1,))
        data = ctx.input_shape(0)
        if data.rank is None:
            return [TensorSpec(ctx.input_type(0), data)]
        with infer_errors(ctx):
            b, _ = _axes(a, data.rank)
            lengths = ctx.input_shape(1)
            dims = list(data.dims)
            if lengths.rank is not None:
                dims[b] = merge_dim(
                    dims[b],
                    lengths.dims[0],
                    f"seq_lengths {lengths} must have one value per batch element of data {data}",
                )
        return [TensorSpec(ctx.input_type(0), PartialShape(dims))]

    @classmethod
    def evaluate(cls, attrs: ReverseSequenceAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, lengths_v = inputs
        b_ax, s_ax = _axes(attrs, x.ndim)
        lengths = np.asarray(lengths_v).reshape(-1).astype(np.int64)
        if lengths.size != x.shape[b_ax]:
            raise ShapeError(
                f"seq_lengths has {lengths.size} values, data has {x.shape[b_ax]} batch elements"
            )
        size = x.shape[s_ax]
        out = x.copy()
        # Work on a view with the batch axis first and the sequence axis second.
        src = np.moveaxis(x, (b_ax, s_ax), (0, 1))
        dst = np.moveaxis(out, (b_ax, s_ax), (0, 1))
        for b, n in enumerate(lengths):
            if not 0 <= n <= size:
                raise ShapeError(f"seq_lengths[{b}] = {int(n)} is out of range for a sequence of {size}")
            dst[b, :n] = src[b, :n][::-1]
        return [out]
