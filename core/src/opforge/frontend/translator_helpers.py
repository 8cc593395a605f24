"""Small building blocks for writing translators, shared by every frontend and open to third
parties. They use only the public :class:`~opforge.frontend.node_context.NodeContext` API."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.element_type import Type
from opforge.frontend.node_context import NodeContext
from opforge.graph import Node, Output, as_output

#: what a translator passes around: a node (its only output) or an output port
Port = Output | Node


def out(v: Port) -> Output:
    return as_output(v)


def rank_of(v: Port) -> int | None:
    """The rank, or None when it is dynamic."""
    return out(v).partial_shape.rank


def require_rank(ctx: NodeContext, v: Port, what: str = "input 0") -> int:
    """The rank; an error naming the node when it is only known at run time."""
    r = rank_of(v)
    if r is None:
        raise ctx.error(f"{what} has a dynamic rank; this op needs the rank while converting")
    return r


def etype(v: Port) -> Type:
    return out(v).element_type


def i64(ctx: NodeContext, values: Any) -> Output:
    """An int64 constant (shapes, axes, indices)."""
    return ctx.const(np.asarray(values, dtype=np.int64))


def scalar_like(ctx: NodeContext, value: Any, like: Port) -> Output:
    """A scalar constant of ``like``'s element type (f32 when that is not known yet)."""
    t = etype(like)
    return ctx.const(np.asarray(value), t if t is not Type.dynamic else Type.f32)


def norm_axis(ctx: NodeContext, axis: int, r: int) -> int:
    """``axis`` made non-negative for rank ``r``; an error naming the node when out of range."""
    a = axis + r if axis < 0 else axis
    if not 0 <= a < max(r, 1):
        raise ctx.error(f"axis {axis} is out of range for rank {r}")
    return a
