"""RMSNormalization (opset 23): opforge's RMSNormalization over ``axis``..last.

The op's scale covers the normalised dims only; ONNX's may also span the leading dims
(unidirectional broadcast to X), so such a scale is applied by a Multiply after the op (a scale
whose extra leading dims are all 1 is squeezed instead). ``stash_type`` 1 is what the op does
(f16/bf16 computed in f32); 11 computes in f64. Y has the element type of ``scale`` (the
schema's V): when X and scale differ, both are computed in the wider of f32 and their types.
"""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import Output, etype, i64, norm_axis, out, rank, require_rank, translator

#: ONNX TensorProto element types stash_type may name, and what the computation then runs in
_STASH = {1: Type.f32, 11: Type.f64}


def _work_type(ctx: NodeContext, tx: Type, ts: Type, stash: int) -> Type:
    if stash not in _STASH:
        raise ctx.error(f"stash_type {stash} is not supported; expected 1 (float) or 11 (double)")
    if _STASH[stash] is Type.f64:
        return Type.f64
    if tx is Type.dynamic and ts is Type.dynamic:
        raise ctx.error("X and scale have unknown element types; the op needs them while converting")
    if tx == ts or Type.dynamic in (tx, ts):
        return tx if tx is not Type.dynamic else ts
    return Type.f64 if Type.f64 in (tx, ts) else Type.f32


def _as(ctx: NodeContext, v: Output, t: Type) -> Output:
    return v if etype(v) in (t, Type.dynamic) else out(ctx.op("Convert", v, destination_type=t))


def convert(ctx: NodeContext) -> ConversionResult:
    x, scale = out(ctx.get_input(0)), out(ctx.get_input(1))
    r = require_rank(ctx, x, "input 0 (X)")
    axis = norm_axis(ctx, int(ctx.get_attribute("axis", -1)), r)
    eps = float(ctx.get_attribute("epsilon", 1e-5))
    tx, ts = etype(x), etype(scale)
    work = _work_type(ctx, tx, ts, int(ctx.get_attribute("stash_type", 1)))
    xs, ss = _as(ctx, x, work), _as(ctx, scale, work)
    s_rank = require_rank(ctx, ss, "input 1 (scale)")
    extra = s_rank - (r - axis)  # leading dims of scale beyond the normalised ones
    after: Output | None = None
    if extra > 0:
        lead = ss.partial_shape.dims[:extra] if rank(ss) is not None else []
        if all(d == 1 for d in lead):
            ss = out(ctx.op("Squeeze", ss, i64(ctx, list(range(extra)))))
        else:
            # a scale that differs along leading dims: normalise with unit scale, then multiply
            after, ss = ss, ctx.const(np.ones(1, work.np), work)
    y = out(ctx.op("RMSNormalization", xs, ss, axis=axis, epsilon=eps))
    if after is not None:
        y = out(ctx.op("Multiply", y, after))
    return [_as(ctx, y, ts if ts is not Type.dynamic else tx)]


EXTENSION = translator("RMSNormalization", convert)
