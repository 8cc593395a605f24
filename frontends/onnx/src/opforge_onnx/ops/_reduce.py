"""Shared conversion of the Reduce* family (each op has its own module). Axes are an attribute
before opset 18 (13 for ReduceSum) and an input after; an empty axes list reduces everything
unless noop_with_empty_axes. The composite ones (ReduceLogSum, ReduceLogSumExp, ReduceSumSquare)
are decomposed.

OpenVINO's ReduceMax/ReduceMin start from the lowest/highest finite value, so a reduction over
only -inf/+inf values, or over no values at all, gives that finite value where ONNX wants the
infinity; for floating-point inputs the translator puts the infinity back (see
:func:`_restore_infinity`).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import etype, i64, out, require_rank, scalar_like, translator

#: ONNX reductions that are one opforge reduction
_SIMPLE = {
    "ReduceMean": "ReduceMean", "ReduceMax": "ReduceMax", "ReduceMin": "ReduceMin",
    "ReduceProd": "ReduceProd", "ReduceSum": "ReduceSum", "ReduceL1": "ReduceL1", "ReduceL2": "ReduceL2",
}


def _axes(ctx: NodeContext, x: Output) -> Output | None:
    since = 13 if ctx.get_op_type() == "ReduceSum" else 18
    if (ctx.get_opset_version() or since) < since:
        a = ctx.get_attribute("axes", None)
        axes_port = i64(ctx, list(a)) if a is not None else None
    else:
        axes_port = ctx.get_input(1) if ctx.has_input(1) else None
    if axes_port is not None and out(axes_port).partial_shape.is_static and out(axes_port).partial_shape.to_tuple() != (0,):
        return axes_port
    if int(ctx.get_attribute("noop_with_empty_axes", 0)):
        return None
    return i64(ctx, list(range(require_rank(ctx, x))))


def _restore_infinity(ctx: NodeContext, kind: str, x: Output, axes: Output, keep: bool, y: Output) -> Output:
    """``y`` with the finite start value replaced by the infinity when no element equals it."""
    t = etype(x)
    if not t.is_float:
        return y
    info = np.finfo(t.np) if t.np.kind == "f" else ml_dtypes.finfo(t.np)
    bound = info.min if kind == "ReduceMax" else info.max
    inf = -np.inf if kind == "ReduceMax" else np.inf
    limit = ctx.const(np.asarray(bound, t.np))
    reached = ctx.op("ReduceLogicalOr", ctx.op("Equal", x, limit), axes, keep_dims=keep)
    missing = ctx.op("LogicalAnd", ctx.op("Equal", y, limit), ctx.op("LogicalNot", reached))
    return out(ctx.op("Select", missing, ctx.const(np.asarray(inf, t.np)), y))


def make(kind: str) -> ConversionExtension:
    def convert(ctx: NodeContext) -> ConversionResult:
        x = ctx.get_input(0)
        keep = bool(ctx.get_attribute("keepdims", 1))
        axes = _axes(ctx, x)
        if axes is None:  # noop_with_empty_axes: the identity (after the element-wise part)
            if kind == "ReduceSumSquare":
                return [ctx.op("Multiply", x, x)]
            if kind == "ReduceLogSumExp":
                return [ctx.op("Log", ctx.op("Exp", x))]
            if kind == "ReduceLogSum":
                return [ctx.op("Log", x)]
            if kind == "ReduceL1":
                return [ctx.op("Abs", x)]
            if kind == "ReduceL2":
                return [ctx.op("Sqrt", ctx.op("Multiply", x, x))]
            return [x]
        if kind in ("ReduceMax", "ReduceMin") and etype(x) is Type.boolean:
            # OpenVINO's ReduceMax/ReduceMin take no booleans: any / all are the same reductions
            logical = "ReduceLogicalOr" if kind == "ReduceMax" else "ReduceLogicalAnd"
            return [ctx.op(logical, x, axes, keep_dims=keep)]
        if kind in ("ReduceMax", "ReduceMin"):
            y = out(ctx.op(kind, x, axes, keep_dims=keep))
            return [_restore_infinity(ctx, kind, x, axes, keep, y)]
        if kind in _SIMPLE:
            return [ctx.op(_SIMPLE[kind], x, axes, keep_dims=keep)]
        if kind == "ReduceSumSquare":
            return [ctx.op("ReduceSum", ctx.op("Multiply", x, x), axes, keep_dims=keep)]
        if kind == "ReduceLogSum":
            return [ctx.op("Log", ctx.op("ReduceSum", x, axes, keep_dims=keep))]
        # ReduceLogSumExp, stabilised by the maximum so large inputs do not overflow; an infinite
        # or NaN maximum shifts by 0 instead (inf - inf would turn a +inf result into NaN)
        m_raw = ctx.op("ReduceMax", x, axes, keep_dims=True)
        m = ctx.op("Select", ctx.op("IsFinite", m_raw), m_raw, scalar_like(ctx, 0.0, x))
        s = ctx.op("ReduceSum", ctx.op("Exp", ctx.op("Subtract", x, m)), axes, keep_dims=keep)
        m2 = m if keep else ctx.op("ReduceMax", m, axes, keep_dims=False)
        return [ctx.op("Add", ctx.op("Log", s), m2)]
    convert.__qualname__ = f"convert_{kind}"
    return translator(kind, convert)
