"""Linear and cubic Resize as one matrix product per resized axis, for what Interpolate-11 cannot
express: ONNX's ``antialias`` (Interpolate's differs), ``exclude_outside``, the
``tf_crop_and_resize`` and ``half_pixel_symmetric`` coordinate modes, ``align_corners`` with
scales (ONNX divides by ``in * scale - 1``, Interpolate by ``out - 1``) and
``keep_aspect_ratio_policy`` (whose one scale drives the coordinates).

Resize is separable: along one axis of input length L and output length O, output i is
``sum_j W[i, j] * x[j]``. The weights follow ONNX's reference exactly, written densely: with
``x_i`` the source coordinate of output i (per coordinate mode) and ``s' = min(scale, 1)`` under
antialias (else 1), ``W[i, j] = k((j - x_i) * s')`` for the linear or cubic kernel ``k``,
normalised over the row under antialias. Taps outside [0, L) are, as in the reference, either
moved onto the edge pixel (edge padding) or, with ``exclude_outside``, dropped with the row
renormalised. Rows are built over j in [-M, L + M) with ``M = 2 L + 2``, wider than any kernel
support (the support is at most 2 / s' <= 2 L, the output having at least one element).

Everything is computed with ops from the scales or sizes, so they may be known only at run time.
The arithmetic is f32 (the reference uses f64: results agree to f32 rounding).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from opforge.element_type import Type
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import etype, i64, out, shape_of

F32 = Type.f32


def _f(ctx: NodeContext, v: float) -> Output:
    return ctx.const(np.asarray(v, np.float32))


def _cubic(ctx: NodeContext, u: Output, a: float) -> Output:
    """Keys' cubic kernel of coefficient ``a`` at ``u = |d|``."""
    u2 = ctx.op("Multiply", u, u)
    u3 = ctx.op("Multiply", u2, u)
    near = ctx.op("Add", ctx.op("Subtract", ctx.op("Multiply", u3, _f(ctx, a + 2)),
                               ctx.op("Multiply", u2, _f(ctx, a + 3))), _f(ctx, 1.0))
    far = ctx.op("Add", ctx.op("Subtract", ctx.op("Multiply", u3, _f(ctx, a)), ctx.op("Multiply", u2, _f(ctx, 5 * a))),
                 ctx.op("Subtract", ctx.op("Multiply", u, _f(ctx, 8 * a)), _f(ctx, 4 * a)))
    zero = _f(ctx, 0.0)
    inner = ctx.op("Select", ctx.op("Less", u, _f(ctx, 2.0)), far, zero)
    return out(ctx.op("Select", ctx.op("LessEqual", u, _f(ctx, 1.0)), near, inner))


def _source_coords(ctx: NodeContext, ctm: str, i: Output, scale: Output, length: Output, n_out: Output,
                   roi: tuple[Output, Output] | None) -> tuple[Output, Output | None]:
    """x_i for every output index ``i`` (f32 [O]) and, for tf_crop_and_resize, which outputs
    fall outside the input (extrapolated)."""
    one, half = _f(ctx, 1.0), _f(ctx, 0.5)
    n_out_f = ctx.op("Convert", n_out, destination_type=F32)
    width = ctx.op("Multiply", scale, length)  # ONNX's unrounded "output_width"
    half_pixel = ctx.op("Subtract", ctx.op("Divide", ctx.op("Add", i, half), scale, m_pythondiv=False), half)
    last = ctx.op("Subtract", length, one)
    if ctm == "half_pixel":
        return out(half_pixel), None
    if ctm == "asymmetric":
        return out(ctx.op("Divide", i, scale, m_pythondiv=False)), None
    if ctm == "pytorch_half_pixel":
        return out(ctx.op("Select", ctx.op("Greater", n_out_f, one), half_pixel, _f(ctx, -0.5))), None
    if ctm == "half_pixel_symmetric":
        adjustment = ctx.op("Divide", n_out_f, width, m_pythondiv=False)
        offset = ctx.op("Multiply", ctx.op("Multiply", length, half), ctx.op("Subtract", one, adjustment))
        return out(ctx.op("Add", offset, half_pixel)), None
    single = ctx.op("Equal", width, one)
    safe_den = ctx.op("Select", single, one, ctx.op("Subtract", width, one))
    if ctm == "align_corners":
        ramp = ctx.op("Divide", ctx.op("Multiply", i, last), safe_den, m_pythondiv=False)
        return out(ctx.op("Select", single, _f(ctx, 0.0), ramp)), None
    if ctm == "tf_crop_and_resize" and roi is not None:
        start, end = roi
        extent = ctx.op("Multiply", ctx.op("Subtract", end, start), last)
        ramp = ctx.op("Divide", ctx.op("Multiply", i, extent), safe_den, m_pythondiv=False)
        x = ctx.op("Add", ctx.op("Select", single, ctx.op("Multiply", extent, half), ramp),
                   ctx.op("Multiply", start, last))
        outside = ctx.op("LogicalOr", ctx.op("Less", x, _f(ctx, 0.0)), ctx.op("Greater", x, last))
        return out(x), out(outside)
    raise ctx.error(f"coordinate_transformation_mode '{ctm}' is not supported")


def axis_weights(ctx: NodeContext, *, mode: str, ctm: str, cubic_a: float, antialias: bool, exclude_outside: bool,
                 scale: Output, length_i: Output, n_out: Output,
                 roi: tuple[Output, Output] | None) -> tuple[Output, Output | None]:
    """W [O, L] for one axis (``scale`` f32 scalar, ``length_i``/``n_out`` i64 scalars) and the
    extrapolation mask [O] for tf_crop_and_resize."""
    length = out(ctx.op("Convert", length_i, destination_type=F32))
    i = out(ctx.op("Range", _f(ctx, 0.0), ctx.op("Convert", n_out, destination_type=F32), _f(ctx, 1.0),
                   output_type=F32))
    x, outside = _source_coords(ctx, ctm, i, scale, length, n_out, roi)
    margin = ctx.op("Add", ctx.op("Multiply", length_i, i64(ctx, 2)), i64(ctx, 2))
    j = ctx.op("Range", ctx.op("Negative", margin), ctx.op("Add", length_i, margin), i64(ctx, 1), output_type=Type.i64)
    jf = ctx.op("Convert", j, destination_type=F32)
    d = ctx.op("Subtract", ctx.op("Unsqueeze", jf, i64(ctx, [0])), ctx.op("Unsqueeze", x, i64(ctx, [1])))
    if antialias:
        d = ctx.op("Multiply", d, ctx.op("Minimum", scale, _f(ctx, 1.0)))
    u = out(ctx.op("Abs", d))
    if mode == "linear":
        w = out(ctx.op("Maximum", ctx.op("Subtract", _f(ctx, 1.0), u), _f(ctx, 0.0)))
    else:
        w = _cubic(ctx, u, cubic_a)
    if antialias:
        w = out(ctx.op("Divide", w, ctx.op("ReduceSum", w, i64(ctx, [1]), keep_dims=True), m_pythondiv=False))
    axis1 = i64(ctx, [1])
    inside = out(ctx.op("Slice", w, ctx.op("Reshape", margin, i64(ctx, [1]), special_zero=False),
                        ctx.op("Reshape", ctx.op("Add", margin, length_i), i64(ctx, [1]), special_zero=False),
                        i64(ctx, [1]), axis1))
    if exclude_outside:
        total = ctx.op("ReduceSum", inside, axis1, keep_dims=True)
        total = ctx.op("Select", ctx.op("Equal", total, _f(ctx, 0.0)), _f(ctx, 1.0), total)
        return out(ctx.op("Divide", inside, total, m_pythondiv=False)), outside
    before = ctx.op("ReduceSum", ctx.op("Slice", w, i64(ctx, [0]), ctx.op("Reshape", margin, i64(ctx, [1]),
                                                                            special_zero=False), i64(ctx, [1]), axis1),
                    axis1, keep_dims=True)
    after = ctx.op("ReduceSum", ctx.op("Slice", w, ctx.op("Reshape", ctx.op("Add", margin, length_i), i64(ctx, [1]),
                                                          special_zero=False),
                                       i64(ctx, [np.iinfo(np.int64).max]), i64(ctx, [1]), axis1),
                   axis1, keep_dims=True)
    cols = ctx.op("Range", i64(ctx, 0), length_i, i64(ctx, 1), output_type=Type.i64)
    first = ctx.op("Convert", ctx.op("Equal", cols, i64(ctx, 0)), destination_type=F32)
    lastc = ctx.op("Convert", ctx.op("Equal", cols, ctx.op("Subtract", length_i, i64(ctx, 1))), destination_type=F32)
    edges = ctx.op("Add", ctx.op("Multiply", before, first), ctx.op("Multiply", after, lastc))
    return out(ctx.op("Add", inside, edges)), outside


def resize_by_matrices(ctx: NodeContext, x: Output, axes: Sequence[int], scales: Sequence[Output],
                       sizes: Sequence[Output], rois: Sequence[tuple[Output, Output] | None], *, mode: str, ctm: str,
                       cubic_a: float, antialias: bool, exclude_outside: bool, extrapolation: float) -> Output:
    """Resize ``x`` along ``axes``, axis k with f32 scalar ``scales[k]`` and i64 scalar output
    length ``sizes[k]``."""
    r = len(x.partial_shape.dims)
    t = etype(x)
    y = x if t is F32 else out(ctx.op("Convert", x, destination_type=F32))
    dims = shape_of(ctx, x)
    masks: list[Output] = []
    for k, a in enumerate(axes):
        length_i = out(ctx.op("Gather", dims, i64(ctx, a), i64(ctx, 0), batch_dims=0))
        w, outside = axis_weights(ctx, mode=mode, ctm=ctm, cubic_a=cubic_a, antialias=antialias,
                                  exclude_outside=exclude_outside, scale=scales[k], length_i=length_i,
                                  n_out=sizes[k], roi=rois[k])
        perm = [p for p in range(r) if p != a] + [a]
        back = [perm.index(p) for p in range(r)]
        moved = ctx.op("Transpose", y, i64(ctx, perm))
        y = out(ctx.op("Transpose", ctx.op("MatMul", moved, w, transpose_b=True), i64(ctx, back)))
        if outside is not None:
            masks.append(out(ctx.op("Reshape", outside, i64(ctx, [1] * a + [-1] + [1] * (r - a - 1)),
                                    special_zero=False)))
    if masks:
        mask = masks[0]
        for m in masks[1:]:
            mask = out(ctx.op("LogicalOr", mask, m))
        y = out(ctx.op("Select", mask, _f(ctx, extrapolation), y))
    if t is F32:
        return y
    if t.is_integral:
        info = np.iinfo(t.np)
        y = out(ctx.op("Clamp", ctx.op("Round", y, mode="half_to_even"), min=float(info.min), max=float(info.max)))
    return out(ctx.op("Convert", y, destination_type=t))
