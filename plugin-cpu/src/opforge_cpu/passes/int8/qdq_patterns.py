"""Recognising the f32 decompositions of DequantizeLinear, QuantizeLinear and the QLinear
requantization (as the ONNX frontend writes them) around the ops the int8 pass rewrites, and
the small graph helpers every rewrite shares."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node, Output

from opforge_cpu.ops.dequantize import Dequantize

#: the value range of each 8-bit integer type
INT8_RANGES = {Type.u8: (0, 255), Type.i8: (-128, 127)}


@dataclasses.dataclass
class QuantizedInput:
    """A u8/i8 tensor read through a per-tensor (de)quantization: real = scale * (q - zero_point)."""

    q: Output
    scale: float
    zero_point: int


@dataclasses.dataclass
class Requantize:
    """Where a quantized op's result goes: real y -> saturate(round(y / scale) + zero_point)."""

    out: Output
    scale: float
    zero_point: int
    type: Type
    nodes: list[Node]


def is_standard(n: Node, *types: str) -> bool:
    return n.op.is_standard and n.type_name in types


def scalar(out: Output) -> float | None:
    v = out.node.constant_value()
    if v is None or v.size != 1:
        return None
    f = float(np.asarray(v).reshape(-1)[0])
    return f if math.isfinite(f) else None


def integral(v: float | None, t: Type) -> int | None:
    if v is None or v != round(v):
        return None
    lo, hi = INT8_RANGES[t]
    return int(v) if lo <= v <= hi else None


def single_user(uses: dict[Output, list[tuple[Node, int]]], out: Output) -> Node | None:
    u = uses.get(out, [])
    return u[0][0] if len(u) == 1 else None


def converted_int8(out: Output) -> tuple[Output, Output | None] | None:
    """``out`` as ``Convert(q) [- z]`` of a u8/i8 tensor ``q``: (q, z's output or None)."""
    n = out.node
    z: Output | None = None
    if is_standard(n, "Subtract"):
        z = n.inputs[1]
        n = n.inputs[0].node
    if not is_standard(n, "Convert") or n.inputs[0].element_type not in INT8_RANGES:
        return None
    return n.inputs[0], z


def _scaled(out: Output) -> Iterator[tuple[Output, Output, Output | None]]:
    """``out`` as the f32 ``(Convert(q) [- z]) * s``, with the factors in either order: each
    (q, s's output, z's output or None) that has that form (the values are the caller's to check)."""
    n = out.node
    if out.element_type is not Type.f32 or not is_standard(n, "Multiply"):
        return
    for a, b in ((0, 1), (1, 0)):
        c = converted_int8(n.inputs[a])
        if c is not None:
            yield c[0], n.inputs[b], c[1]


def _zero_point(q: Output, z: Output | None) -> int | None:
    """The scalar zero point ``z`` (0 without one) as an integer of q's range, or None."""
    return integral(0.0 if z is None else scalar(z), q.element_type)


def dequantized(out: Output) -> QuantizedInput | None:
    """``out`` as DequantizeLinear of a u8/i8 tensor: ``(Convert(q) - z) * s`` in f32, per tensor."""
    n = out.node
    if isinstance(n.op, type) and issubclass(n.op, Dequantize):
        return QuantizedInput(n.inputs[0], float(n.attrs.scale), int(n.attrs.zero_point))  # type: ignore[attr-defined]
    for q, s_out, z_out in _scaled(out):
        s = scalar(s_out)
        zp = _zero_point(q, z_out)
        if s is not None and s > 0 and zp is not None:
            return QuantizedInput(q, s, zp)
    return None


def centred(out: Output) -> QuantizedInput | None:
    """``out`` as the zero-point-centred i32 operand of QLinearConv/QLinearMatMul:
    ``Convert(q, i32) - z`` (scale 1: the scales are in the requantization)."""
    c = converted_int8(out) if out.element_type is Type.i32 else None
    if c is None:
        return None
    zp = _zero_point(*c)
    return None if zp is None else QuantizedInput(c[0], 1.0, zp)


def quantize_after(uses: dict[Output, list[tuple[Node, int]]], y: Output) -> Requantize | None:
    """The QuantizeLinear decomposition reading f32 ``y``, when it is y's only reader."""
    d = single_user(uses, y)
    return None if d is None else quantize_chain(uses, d)


def _rounded(uses: dict[Output, list[tuple[Node, int]]], y: Output
             ) -> tuple[list[Node], float | None, Output, Node | None] | None:
    """The rounding both QuantizeLinear and the QLinear requantization start with, reading ``y``
    alone: ``Round_even(y) [+ z]``. Returns its nodes, z (0 without the Add, None when not a
    scalar constant), its result and that result's only reader (or None)."""
    r = single_user(uses, y)
    if r is None or not is_standard(r, "Round") or r.attrs.mode != "half_to_even":  # type: ignore[attr-defined]
        return None
    nodes = [r]
    cur = r.output(0)
    z: float | None = 0.0
    n = single_user(uses, cur)
    if n is not None and is_standard(n, "Add"):
        z = scalar(n.inputs[1] if n.inputs[0] == cur else n.inputs[0])
        nodes.append(n)
        cur = n.output(0)
        n = single_user(uses, cur)
    return nodes, z, cur, n


def quantize_chain(uses: dict[Output, list[tuple[Node, int]]], d: Node) -> Requantize | None:
    """The QuantizeLinear decomposition that starts at Divide ``d``:
    Convert(Clamp(Round_even(y / s) [+ z], lo, hi)) with [lo, hi] the u8/i8 range."""
    if not is_standard(d, "Divide") or d.inputs[0].element_type is not Type.f32:
        return None
    s = scalar(d.inputs[1])
    tail = _rounded(uses, d.output(0))
    if s is None or s <= 0 or tail is None:
        return None
    rounded, z, _, n = tail
    nodes = [d, *rounded]
    if n is None or not is_standard(n, "Clamp"):
        return None
    c = single_user(uses, n.output(0))
    if c is None or not is_standard(c, "Convert") or c.output(0).element_type not in INT8_RANGES:
        return None
    t = c.output(0).element_type
    lo, hi = INT8_RANGES[t]
    zp = integral(z, t)
    if zp is None or (n.attrs.min, n.attrs.max) != (float(lo), float(hi)):  # type: ignore[attr-defined]
        return None
    return Requantize(c.output(0), s, zp, t, [*nodes, n, c])


def requantize_after(uses: dict[Output, list[tuple[Node, int]]], acc: Output, channels: int, conv: bool
                     ) -> tuple[np.ndarray, Requantize] | None:
    """The QLinear requantization of i32 ``acc`` (``opforge_onnx.ops._integer.requantize``):
    Convert(Min(Max(Round_even(f64(acc) * M) [+ z], lo), hi)). Returns M per channel."""
    cv = single_user(uses, acc)
    if cv is None or not is_standard(cv, "Convert") or cv.output(0).element_type is not Type.f64:
        return None
    mul = single_user(uses, cv.output(0))
    if mul is None or not is_standard(mul, "Multiply"):
        return None
    mv = (mul.inputs[1] if mul.inputs[0] == cv.output(0) else mul.inputs[0]).node.constant_value()
    rank = len(acc.shape)
    m = channel_vector(mv, rank, channels, conv=conv)
    tail = _rounded(uses, mul.output(0))
    if m is None or np.any(m <= 0) or tail is None:
        return None
    rounded, z, cur, n = tail
    nodes = [cv, mul, *rounded]
    bounds = []
    for name in ("Maximum", "Minimum"):
        if n is None or not is_standard(n, name):
            return None
        bounds.append(scalar(n.inputs[1] if n.inputs[0] == cur else n.inputs[0]))
        nodes.append(n)
        cur = n.output(0)
        n = single_user(uses, cur)
    if n is None or not is_standard(n, "Convert") or n.output(0).element_type not in INT8_RANGES:
        return None
    t = n.output(0).element_type
    zp = integral(z, t)
    if zp is None or tuple(bounds) != tuple(float(b) for b in INT8_RANGES[t]):
        return None
    return m, Requantize(n.output(0), 1.0, zp, t, [*nodes, n])


def channel_vector(v: np.ndarray | None, rank: int, channels: int, conv: bool) -> np.ndarray | None:
    """A constant that varies at most along the output channel (axis 1 of a convolution's
    output, the last axis of a MatMul's), as a [channels] f64 vector."""
    if v is None or v.ndim > rank:
        return None
    a = np.asarray(v, np.float64)
    s = (1,) * (rank - a.ndim) + a.shape
    axis = 1 if conv else rank - 1
    if any(d != 1 for i, d in enumerate(s) if i != axis) or s[axis] not in (1, channels):
        return None
    return np.broadcast_to(a.reshape(-1), (channels,)).copy()


def dequantized_constant(out: Output) -> tuple[np.ndarray, np.ndarray] | None:
    """``out`` as DequantizeLinear of a constant s8 tensor with zero point 0:
    ``Convert(C) [- 0] * s`` -> (C, s)."""
    for q, s_out, z_out in _scaled(out):
        s = s_out.node.constant_value()
        z = None if z_out is None else z_out.node.constant_value()
        c = q.node.constant_value()
        if (q.element_type is not Type.i8 or s is None or not np.all(np.asarray(s) > 0) or c is None
                or (z_out is not None and (z is None or np.any(np.asarray(z) != 0)))):
            continue
        return np.asarray(c), np.asarray(s)
    return None


def is_op(node: Node, op: type) -> bool:
    return isinstance(node.op, type) and issubclass(node.op, op)


def fused_names(*nodes: Node) -> list[str]:
    """The original nodes behind ``nodes`` (their own fused names, or themselves), each once."""
    names: list[str] = []
    for n in nodes:
        for name in n.rt_info.get("fused_names") or [n.name]:
            if name not in names:
                names.append(name)
    return names
