"""MatMul-1: matrix product over the two innermost axes with NumPy-style batch broadcasting.

A 1-D first operand is read as a row [1, K] and a 1-D second operand as a column [K, 1]; the
added axis is removed from the result, and transpose attributes are ignored for 1-D operands.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._elementwise import broadcast_shapes
from opforge.opset._nn_util import same_type
from opforge.shape import Dim, PartialShape


class MatMulAttrs(OpAttrs):
    transpose_a: bool = False
    transpose_b: bool = False


class MatMul(Op):
    type_name = "MatMul"
    cost_class = CostClass.COMPUTE
    version = "opset1"
    Attrs = MatMulAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: MatMulAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_type(ctx, [(0, "A"), (1, "B")])
        sa, sb = ctx.input_shape(0), ctx.input_shape(1)
        for i, s in ((0, sa), (1, sb)):
            if s.rank == 0:
                raise ctx.error(f"input {i} ({'AB'[i]}) is a scalar, expected rank 1 or more")
        if sa.rank is None or sb.rank is None:
            return [TensorSpec(t, PartialShape.dynamic())]
        da = _as_matrix(list(sa.dims), a.transpose_a, row=True)
        db = _as_matrix(list(sb.dims), a.transpose_b, row=False)
        ka, kb = da[-1], db[-2]
        if ka is not None and kb is not None and ka != kb:
            raise ctx.error(
                f"inner dimensions differ: A {sa} gives K={ka}, B {sb} gives K={kb} "
                f"(transpose_a={a.transpose_a}, transpose_b={a.transpose_b})"
            )
        batch = broadcast_shapes(ctx, PartialShape(da[:-2]), PartialShape(db[:-2]))
        out: list[Dim] = [*batch.dims]
        if sa.rank > 1:
            out.append(da[-2])
        if sb.rank > 1:
            out.append(db[-1])
        return [TensorSpec(t, PartialShape(out))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a, b = inputs
        dtype = a.dtype
        if a.ndim > 1 and attrs.transpose_a:
            a = np.swapaxes(a, -1, -2)
        if b.ndim > 1 and attrs.transpose_b:
            b = np.swapaxes(b, -1, -2)
        # Integers multiply in int64 so overflow wraps like the C++ kernels; halves widen to f32.
        work = (
            np.int64
            if dtype.kind == "i"
            else np.uint64
            if dtype.kind == "u"
            else (dtype if dtype in (np.float32, np.float64) else np.float32)
        )
        y = np.matmul(a.astype(work, copy=False), b.astype(work, copy=False))
        return [np.asarray(y).astype(dtype)]


def _as_matrix(dims: list[Dim], transpose: bool, row: bool) -> list[Dim]:
    if len(dims) == 1:
        return [1, dims[0]] if row else [dims[0], 1]
    if transpose:
        dims[-1], dims[-2] = dims[-2], dims[-1]
    return dims
