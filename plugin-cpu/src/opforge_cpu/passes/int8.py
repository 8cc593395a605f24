"""int8 execution of quantized models: the CPU graph pass that turns the f32 decomposition of a
quantized convolution or MatMul back into one int8 node.

The ONNX frontend decomposes QuantizeLinear/DequantizeLinear (QDQ models, as ONNX Runtime's
static quantizer writes them) and QLinearConv/QLinearMatMul into element-wise chains, so that
every device can run them in f32. Here the CPU recognises, around each Convolution,
GroupConvolution and MatMul with constant weights::

    QDQ:     (Convert(q_x) - z_x) * s_x  ->  op(., W)  [+ bias] [Relu/Clamp]  [-> quantize -> q_y]
    QLinear: Convert(q_x, i32) - z_x    ->  op(., W_i32) [+ bias_i32] -> requantize(M) -> q_y

and replaces the whole region by one QuantizedConvolution/QuantizedMatMul (``opforge_cpu.ops``)
reading the u8/i8 tensor ``q_x`` and writing ``q_y`` (or the f32 value when no quantize
follows), which the C++ kernels run as one oneDNN int8 primitive.

What lies between those nodes stays on the integers too where the QDQ graph allows it: a
QuantizeLinear of an f32 op whose inputs are all DequantizeLinear becomes one node on the u8/i8
tensors (concatenations, element-wise chains as 256-entry tables, Add/Multiply, average pools,
element moves, residual sums into the convolution before them), computing the QDQ arithmetic.

Weights: the frontend folds DequantizeLinear of constant weights into f32 constants while
converting, so the int8 weights are recovered from them (``int8_weights``): a weight tensor is
used in int8 only when every output channel is *exactly* (to f32 rounding) an int8 vector times
one scale, i.e. when the int8 form loses nothing. Anything else stays f32 and runs as before.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterator
from typing import ClassVar

import numpy as np
from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.opset._elementwise import BinaryElementwise, UnaryElementwise
from opforge.opset._pool import pool_geometry
from opforge.opset.constant import Constant
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.ops.quantized_avg_pool import QuantizedAvgPool
from opforge_cpu.ops.quantized_concat import QuantizedConcat
from opforge_cpu.ops.quantized_convolution import QuantizedConvolution
from opforge_cpu.ops.quantized_eltwise import QuantizedEltwise
from opforge_cpu.ops.quantized_lookup import QuantizedLookup
from opforge_cpu.ops.quantized_mat_mul import QuantizedMatMul
from opforge_cpu.ops.quantized_max_pool import QuantizedMaxPool

#: max |q| of the symmetric int8 ranges quantizers use for weights: [-127, 127] (ONNX Runtime,
#: OpenVINO's NNCF), [-128, 127], and the 7-bit "reduce_range" ones
_WEIGHT_RANGES = (127.0, 128.0, 63.0, 64.0)
#: how far (relative to the channel's largest |w|) a weight may be from q * scale: f32 rounding of
#: the dequantized product and of the recovered scale stay below 2^-22; a weight that is not
#: int8 * scale misses by ~1/4 step (~2e-3 of the largest |w|)
_WEIGHT_TOLERANCE = 1e-6

_INT8 = {Type.u8: (0, 255), Type.i8: (-128, 127)}

#: oneDNN ISAs with no VNNI dot product. Their u8 x s8 convolutions and matrix products add the
#: products in pairs with vpmaddubsw, which saturates at int16: 255 * (127 + 127) overflows, so
#: full-range int8 weights (ONNX Runtime's and NNCF's default) give silently wrong sums, up to 23
#: quantization steps off on an inception block. ONNX Runtime's answer is 7-bit weights
#: (reduce_range); a model quantized without it keeps such layers in f32 here.
_NO_VNNI = frozenset({"x86-64", "sse41", "avx", "avx2", "avx512_core"})
#: the largest |weight| whose pair sums cannot saturate: 255 * (64 + 64) = 32640 <= 32767
_PAIR_SAFE_WEIGHT = 64


@functools.cache
def _pairs_saturate() -> bool:
    """Whether this host's int8 kernels sum u8 x s8 pairs in saturating int16 (no VNNI, as
    oneDNN sees the host: ONEDNN_MAX_CPU_ISA caps it)."""
    from opforge_cpu._loader import load_core

    return str(load_core().cpu_isa()) in _NO_VNNI


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


def _std(n: Node, *types: str) -> bool:
    return n.op.is_standard and n.type_name in types


def _scalar(out: Output) -> float | None:
    v = out.node.constant_value()
    if v is None or v.size != 1:
        return None
    f = float(np.asarray(v).reshape(-1)[0])
    return f if math.isfinite(f) else None


def _integral(v: float | None, t: Type) -> int | None:
    if v is None or v != round(v):
        return None
    lo, hi = _INT8[t]
    return int(v) if lo <= v <= hi else None


def _single_user(uses: dict[Output, list[tuple[Node, int]]], out: Output) -> Node | None:
    u = uses.get(out, [])
    return u[0][0] if len(u) == 1 else None


def _converted(out: Output) -> tuple[Output, Output | None] | None:
    """``out`` as ``Convert(q) [- z]`` of a u8/i8 tensor ``q``: (q, z's output or None)."""
    n = out.node
    z: Output | None = None
    if _std(n, "Subtract"):
        z = n.inputs[1]
        n = n.inputs[0].node
    if not _std(n, "Convert") or n.inputs[0].element_type not in _INT8:
        return None
    return n.inputs[0], z


def _scaled(out: Output) -> Iterator[tuple[Output, Output, Output | None]]:
    """``out`` as the f32 ``(Convert(q) [- z]) * s``, with the factors in either order: each
    (q, s's output, z's output or None) that has that form (the values are the caller's to check)."""
    n = out.node
    if out.element_type is not Type.f32 or not _std(n, "Multiply"):
        return
    for a, b in ((0, 1), (1, 0)):
        c = _converted(n.inputs[a])
        if c is not None:
            yield c[0], n.inputs[b], c[1]


def _zero_point(q: Output, z: Output | None) -> int | None:
    """The scalar zero point ``z`` (0 without one) as an integer of q's range, or None."""
    return _integral(0.0 if z is None else _scalar(z), q.element_type)


def dequantized(out: Output) -> QuantizedInput | None:
    """``out`` as DequantizeLinear of a u8/i8 tensor: ``(Convert(q) - z) * s`` in f32, per tensor."""
    n = out.node
    if isinstance(n.op, type) and issubclass(n.op, Dequantize):
        return QuantizedInput(n.inputs[0], float(n.attrs.scale), int(n.attrs.zero_point))  # type: ignore[attr-defined]
    for q, s_out, z_out in _scaled(out):
        s = _scalar(s_out)
        zp = _zero_point(q, z_out)
        if s is not None and s > 0 and zp is not None:
            return QuantizedInput(q, s, zp)
    return None


def centred(out: Output) -> QuantizedInput | None:
    """``out`` as the zero-point-centred i32 operand of QLinearConv/QLinearMatMul:
    ``Convert(q, i32) - z`` (scale 1: the scales are in the requantization)."""
    c = _converted(out) if out.element_type is Type.i32 else None
    if c is None:
        return None
    zp = _zero_point(*c)
    return None if zp is None else QuantizedInput(c[0], 1.0, zp)


def quantize_after(uses: dict[Output, list[tuple[Node, int]]], y: Output) -> Requantize | None:
    """The QuantizeLinear decomposition reading f32 ``y``, when it is y's only reader."""
    d = _single_user(uses, y)
    return None if d is None else quantize_chain(uses, d)


def _rounded(uses: dict[Output, list[tuple[Node, int]]], y: Output
             ) -> tuple[list[Node], float | None, Output, Node | None] | None:
    """The rounding both QuantizeLinear and the QLinear requantization start with, reading ``y``
    alone: ``Round_even(y) [+ z]``. Returns its nodes, z (0 without the Add, None when not a
    scalar constant), its result and that result's only reader (or None)."""
    r = _single_user(uses, y)
    if r is None or not _std(r, "Round") or r.attrs.mode != "half_to_even":  # type: ignore[attr-defined]
        return None
    nodes = [r]
    cur = r.output(0)
    z: float | None = 0.0
    n = _single_user(uses, cur)
    if n is not None and _std(n, "Add"):
        z = _scalar(n.inputs[1] if n.inputs[0] == cur else n.inputs[0])
        nodes.append(n)
        cur = n.output(0)
        n = _single_user(uses, cur)
    return nodes, z, cur, n


def quantize_chain(uses: dict[Output, list[tuple[Node, int]]], d: Node) -> Requantize | None:
    """The QuantizeLinear decomposition that starts at Divide ``d``:
    Convert(Clamp(Round_even(y / s) [+ z], lo, hi)) with [lo, hi] the u8/i8 range."""
    if not _std(d, "Divide") or d.inputs[0].element_type is not Type.f32:
        return None
    s = _scalar(d.inputs[1])
    tail = _rounded(uses, d.output(0))
    if s is None or s <= 0 or tail is None:
        return None
    rounded, z, _, n = tail
    nodes = [d, *rounded]
    if n is None or not _std(n, "Clamp"):
        return None
    c = _single_user(uses, n.output(0))
    if c is None or not _std(c, "Convert") or c.output(0).element_type not in _INT8:
        return None
    t = c.output(0).element_type
    lo, hi = _INT8[t]
    zp = _integral(z, t)
    if zp is None or (n.attrs.min, n.attrs.max) != (float(lo), float(hi)):  # type: ignore[attr-defined]
        return None
    return Requantize(c.output(0), s, zp, t, [*nodes, n, c])


def requantize_after(uses: dict[Output, list[tuple[Node, int]]], acc: Output, channels: int, conv: bool
                     ) -> tuple[np.ndarray, Requantize] | None:
    """The QLinear requantization of i32 ``acc`` (``opforge_onnx.ops._integer.requantize``):
    Convert(Min(Max(Round_even(f64(acc) * M) [+ z], lo), hi)). Returns M per channel."""
    cv = _single_user(uses, acc)
    if cv is None or not _std(cv, "Convert") or cv.output(0).element_type is not Type.f64:
        return None
    mul = _single_user(uses, cv.output(0))
    if mul is None or not _std(mul, "Multiply"):
        return None
    mv = (mul.inputs[1] if mul.inputs[0] == cv.output(0) else mul.inputs[0]).node.constant_value()
    rank = len(acc.shape)
    m = _channel_vector(mv, rank, channels, conv=conv)
    tail = _rounded(uses, mul.output(0))
    if m is None or np.any(m <= 0) or tail is None:
        return None
    rounded, z, cur, n = tail
    nodes = [cv, mul, *rounded]
    bounds = []
    for name in ("Maximum", "Minimum"):
        if n is None or not _std(n, name):
            return None
        bounds.append(_scalar(n.inputs[1] if n.inputs[0] == cur else n.inputs[0]))
        nodes.append(n)
        cur = n.output(0)
        n = _single_user(uses, cur)
    if n is None or not _std(n, "Convert") or n.output(0).element_type not in _INT8:
        return None
    t = n.output(0).element_type
    zp = _integral(z, t)
    if zp is None or tuple(bounds) != tuple(float(b) for b in _INT8[t]):
        return None
    return m, Requantize(n.output(0), 1.0, zp, t, [*nodes, n])


def _channel_vector(v: np.ndarray | None, rank: int, channels: int, conv: bool) -> np.ndarray | None:
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


def int8_weights(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``rows`` ([C_out, R] f32, one output channel per row) as int8 values times one scale per
    row, when that is exact (see the module docstring); else None. Per-channel and per-tensor
    scales both come out: a row's scale is its own largest |w| or the tensor's, over the range."""
    if rows.size == 0 or rows.dtype != np.float32:
        return None
    w = rows.astype(np.float64)
    row_max = np.abs(w).max(axis=1)
    all_max = float(row_max.max())
    if all_max == 0.0:
        return None
    scale = np.zeros(len(w))
    q = np.zeros_like(w)
    todo = np.ones(len(w), bool)
    for peak in (row_max, np.full(len(w), all_max)):
        for k in _WEIGHT_RANGES:
            s = np.where(peak > 0, peak / k, 1.0)
            qq = np.rint(w / s[:, None])
            fits = (qq.max(axis=1) <= 127) & (qq.min(axis=1) >= -128)
            exact = np.abs(qq * s[:, None] - w).max(axis=1) <= _WEIGHT_TOLERANCE * np.maximum(row_max, 1e-30)
            take = todo & fits & exact
            scale[take] = s[take]
            q[take] = qq[take]
            todo &= ~take
    if todo.any():
        return None
    return q.astype(np.int8), scale.astype(np.float32)


class QuantizedOpFusion(p.MatcherPass):
    """Convolution/GroupConvolution/MatMul of a dequantized (or zero-point-centred) u8/i8 input
    and constant weights, with its tail -> one QuantizedConvolution/QuantizedMatMul."""

    name: ClassVar[str] = "cpu_int8_quantized_ops"

    def pattern(self) -> p.PatternNode:
        return p.op(["Convolution", "GroupConvolution", "MatMul"], p.capture("x"), p.capture("w"),
                    predicate=lambda out: out.node.op.is_standard and out.partial_shape.is_static)

    def callback(self, match: p.Match, model: Model) -> bool:
        node = match.root.node
        x = match["x"]
        if not x.partial_shape.is_static:
            return False
        integer = x.element_type is Type.i32
        src = centred(x) if integer else dequantized(x)
        if src is None:
            return False
        is_mm = node.type_name == "MatMul"
        wv = match["w"].node.constant_value()
        if wv is None:
            return self._dequantized_weights(match, model, src)
        w = wv
        if is_mm:
            if node.attrs.transpose_a or w.ndim != 2 or len(x.shape) < 2:  # type: ignore[attr-defined]
                return False
            w = w if node.attrs.transpose_b else w.T  # type: ignore[attr-defined]
            rows = w  # [N, K]: one row per output column
        else:
            rows = w.reshape(-1, int(np.prod(w.shape[2:] if node.type_name == "GroupConvolution" else w.shape[1:])))
        channels = rows.shape[0]
        if integer:
            got = self._integer_weights(rows)
        else:
            got = int8_weights(rows)
        if got is None:
            return False
        q_rows, w_scale = got
        q_w = np.ascontiguousarray(q_rows.T) if is_mm else q_rows.reshape(w.shape)
        return self._replace(match, model, src, q_w, w_scale, channels, integer)

    def _dequantized_weights(self, match: p.Match, model: Model, src: QuantizedInput) -> bool:
        """Weights still computed at run time as DequantizeLinear of a constant s8 tensor: those
        too large to fold while converting (a VGG's 100M-weight FC layers), where the int8
        values and scales are there to read."""
        node = match.root.node
        got = dequantized_constant(match["w"])
        if got is None or node.type_name == "GroupConvolution":
            return False
        q, scale = got
        if node.type_name == "MatMul":
            if node.attrs.transpose_a or q.ndim != 2 or len(match["x"].shape) < 2:  # type: ignore[attr-defined]
                return False
            axis = 0 if node.attrs.transpose_b else 1  # type: ignore[attr-defined]
            q_w = np.ascontiguousarray(q.T if node.attrs.transpose_b else q)  # type: ignore[attr-defined]
        else:
            axis, q_w = 0, q
        channels = q.shape[axis]
        s = np.asarray(scale, np.float64)
        s = s.reshape((1,) * (q.ndim - s.ndim) + s.shape)
        if any(d != 1 for i, d in enumerate(s.shape) if i != axis) or s.shape[axis] not in (1, channels):
            return False
        w_scale = np.broadcast_to(s.reshape(-1), (channels,)).astype(np.float32)
        return self._replace(match, model, src, q_w, w_scale, channels, False)

    def _replace(self, match: p.Match, model: Model, src: QuantizedInput, q_w: np.ndarray, w_scale: np.ndarray,
                 channels: int, integer: bool) -> bool:
        if _pairs_saturate() and int(np.abs(q_w.astype(np.int16)).max(initial=0)) > _PAIR_SAFE_WEIGHT:
            return False  # see _NO_VNNI: the f32 path gives the right answer, the int8 one would not
        node = match.root.node
        is_mm = node.type_name == "MatMul"
        uses = model.consumers()
        fused = [node]
        cur = node.output(0)
        bias: np.ndarray | None = None
        post: list[tuple[str, dict[str, float]]] = []
        out: Requantize | None = None
        if integer:
            user = _single_user(uses, cur)
            if user is not None and _std(user, "Add"):
                other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
                bias = _channel_vector(other.node.constant_value(), len(cur.shape), channels, conv=not is_mm)
                if bias is None or other.element_type is not Type.i32:
                    return False
                fused.append(user)
                cur = user.output(0)
            req = requantize_after(uses, cur, channels, conv=not is_mm)
            if req is None:
                return False  # an i32 result read as such: the exact integer kernels run it
            m, out = req
            w_scale = (w_scale * m).astype(np.float32)  # real units = acc * M
            if bias is not None:
                bias = bias * m
        else:
            while True:
                user = _single_user(uses, cur)
                if user is None or user.output(0).element_type is not Type.f32 or tuple(user.output(0).shape) != tuple(cur.shape):
                    break
                if _std(user, "Add") and bias is None and not post:
                    other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
                    bias = _channel_vector(other.node.constant_value(), len(cur.shape), channels, conv=not is_mm)
                    if bias is None:
                        break
                elif _std(user, "Relu"):
                    post.append(("Relu", {}))
                elif _std(user, "Clamp"):
                    post.append(("Clamp", {"min": float(user.attrs.min), "max": float(user.attrs.max)}))  # type: ignore[attr-defined]
                else:
                    break
                fused.append(user)
                cur = user.output(0)
            out = quantize_after(uses, cur)
        attrs: dict[str, object] = {
            "src_scale": src.scale, "src_zero_point": src.zero_point, "post_ops": post,
            "output_type": "f32" if out is None else out.type.ir,
        }
        if out is not None:
            attrs |= {"dst_scale": out.scale, "dst_zero_point": out.zero_point}
        if not is_mm:
            attrs |= {k: getattr(node.attrs, k) for k in ("strides", "pads_begin", "pads_end", "dilations", "auto_pad")}
        consts = [q_w, w_scale] + ([] if bias is None else [bias.astype(np.float32)])
        ins = [src.q] + [Node.create(Constant, [], {"value": np.ascontiguousarray(c)}, name=f"{node.name}/int8/{k}").output(0)
                         for k, c in zip(("weights", "weight_scales", "bias"), consts)]
        op = QuantizedMatMul if is_mm else QuantizedConvolution
        new = Node.create(op, ins, attrs, name=node.name if out is None else out.out.node.name)
        all_nodes = fused + ([] if out is None else out.nodes)
        new.rt_info["fused_names"] = [n.name for n in all_nodes]
        model.replace_output(cur if out is None else out.out, new.output(0))
        return True

    @staticmethod
    def _integer_weights(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Centred QLinear weights: i32 values that fit int8 (scale 1; M carries the scales)."""
        if rows.dtype != np.int32 or rows.size == 0 or rows.min() < -128 or rows.max() > 127:
            return None
        return rows.astype(np.int8), np.ones(rows.shape[0], np.float32)


class QuantizeFusion(p.MatcherPass):
    """A QuantizeLinear decomposition no quantized op absorbed (before a residual Add, a pooling,
    a concatenation) -> one Quantize: one pass over the tensor instead of five."""

    name: ClassVar[str] = "cpu_int8_quantize"

    def pattern(self) -> p.PatternNode:
        return p.op("Divide", p.any_input(), p.constant(), predicate=lambda out: out.partial_shape.is_static)

    def callback(self, match: p.Match, model: Model) -> bool:
        q = quantize_chain(model.consumers(), match.root.node)
        if q is None:
            return False
        new = Node.create(Quantize, [match.root.node.inputs[0]],
                          {"scale": q.scale, "zero_point": q.zero_point, "output_type": q.type.ir}, name=q.out.node.name)
        new.rt_info["fused_names"] = [n.name for n in q.nodes]
        model.replace_output(q.out, new.output(0))
        return True


class DequantizeFusion(p.MatcherPass):
    """A DequantizeLinear decomposition read by anything else than a quantized op -> one
    Dequantize: one pass over the tensor instead of three."""

    name: ClassVar[str] = "cpu_int8_dequantize"

    def pattern(self) -> p.PatternNode:
        return p.op("Multiply", predicate=lambda out: out.partial_shape.is_static and out.node.op.is_standard)

    def callback(self, match: p.Match, model: Model) -> bool:
        d = dequantized(match.root)
        if d is None:
            return False
        new = Node.create(Dequantize, [d.q], {"scale": d.scale, "zero_point": d.zero_point}, name=match.root.node.name)
        chain = [match.root.node]
        while True:  # Multiply <- [Subtract <-] Convert <- q: the non-constant input each time
            data = [i for i in chain[-1].inputs if i.node.constant_value() is None]
            if len(data) != 1 or data[0] == d.q:
                break
            chain.append(data[0].node)
        new.rt_info["fused_names"] = [n.name for n in reversed(chain)]
        model.replace_output(match.root, new.output(0))
        return True


def _is(node: Node, op: type) -> bool:
    return isinstance(node.op, type) and issubclass(node.op, op)


class ResidualSumFusion(p.MatcherPass):
    """Quantize([Relu](Dequantize(q_conv) + Dequantize(q_a))) where q_conv is a quantized
    convolution's own output and read only there -> that convolution with q_a added by oneDNN's
    sum post-op over its output buffer (a ResNet/MobileNetV2 residual block's end): no u8 ->
    f32 -> u8 round trip of both operands. Unlike the QDQ graph, the convolution's result is not
    rounded to its own u8 grid before the addition (as OpenVINO runs it too): the output may
    differ from ONNX Runtime's by one step where that rounding decided it. (It is clamped to that
    grid's range, as the QDQ graph saturates it.)"""

    name: ClassVar[str] = "cpu_int8_residual_sum"

    def pattern(self) -> p.PatternNode:
        return p.op(Quantize)

    def callback(self, match: p.Match, model: Model) -> bool:
        quant = match.root.node
        uses = model.consumers()
        tail = quant.inputs[0].node
        post: list[tuple[str, dict[str, float]]] = []
        fused = [quant]
        if _std(tail, "Relu") and _single_user(uses, tail.output(0)) is quant:
            post.append(("Relu", {}))
            fused.append(tail)
            tail = tail.inputs[0].node
        if not _std(tail, "Add") or _single_user(uses, tail.output(0)) is not fused[-1] or len(tail.inputs) != 2:
            return False
        out_type = quant.output(0).element_type
        for k in (0, 1):
            dq_conv, dq_other = tail.inputs[k].node, tail.inputs[1 - k].node
            if not (_is(dq_conv, Dequantize) and _is(dq_other, Dequantize)):
                return False
            conv = dq_conv.inputs[0].node
            q_a = dq_other.inputs[0]
            if (not _is(conv, QuantizedConvolution) or conv.attrs.sum_input >= 0 or conv.attrs.post_ops  # type: ignore[attr-defined]
                    or conv.output(0).element_type is not out_type or q_a.element_type is not out_type
                    or tuple(q_a.shape) != tuple(conv.output(0).shape) or q_a == conv.output(0)
                    or _single_user(uses, conv.output(0)) is not dq_conv
                    or _single_user(uses, dq_conv.output(0)) is not tail):
                continue
            a = conv.attrs
            # the QDQ graph saturates the convolution's result on its own grid before the Add:
            # clamp it to that grid's range first (an outlier past it was 12 steps off without)
            lo, hi = _INT8[conv.output(0).element_type]
            own = (float(a.dst_scale), int(a.dst_zero_point))  # type: ignore[attr-defined]
            attrs = {k2: getattr(a, k2) for k2 in type(a).model_fields} | {
                "sum_clamp": [own[0] * (lo - own[1]), own[0] * (hi - own[1])],
                "sum_input": len(conv.inputs), "sum_scale": float(dq_other.attrs.scale),  # type: ignore[attr-defined]
                "sum_zero_point": int(dq_other.attrs.zero_point), "post_ops": post,  # type: ignore[attr-defined]
                "dst_scale": float(quant.attrs.scale), "dst_zero_point": int(quant.attrs.zero_point),  # type: ignore[attr-defined]
            }
            new = Node.create(QuantizedConvolution, [*conv.inputs, q_a], attrs, name=quant.name)
            names = list(conv.rt_info.get("fused_names") or [conv.name])
            for n in (dq_conv, dq_other, tail, *reversed(fused)):
                names += list(n.rt_info.get("fused_names") or [n.name])
            new.rt_info["fused_names"] = names
            model.replace_output(quant.output(0), new.output(0))
            return True
        return False


class MaxPoolFusion(p.MatcherPass):
    """Quantize(MaxPool(Dequantize(q))) with the same scale, zero point and type on both sides
    -> QuantizedMaxPool(q): exact (max commutes with the monotonic (de)quantization), and the
    tensor stays u8 in its producer's layout."""

    name: ClassVar[str] = "cpu_int8_max_pool"

    def pattern(self) -> p.PatternNode:
        return p.op(Quantize, p.op("MaxPool", p.op(Dequantize)))

    def callback(self, match: p.Match, model: Model) -> bool:
        quant = match.root.node
        pool = quant.inputs[0].node
        deq = pool.inputs[0].node
        uses = model.consumers()
        if (not pool.op.is_standard or quant.inputs[0].index != 0 or _single_user(uses, pool.output(0)) is not quant
                or any(uses.get(o) for o in pool.outputs()[1:])
                or (deq.attrs.scale, deq.attrs.zero_point) != (quant.attrs.scale, quant.attrs.zero_point)  # type: ignore[attr-defined]
                or deq.inputs[0].element_type is not quant.output(0).element_type):
            return False
        new = Node.create(QuantizedMaxPool, [deq.inputs[0]], pool.attrs.model_dump(), name=quant.name)
        new.rt_info["fused_names"] = [n for x in (deq, pool, quant) for n in (x.rt_info.get("fused_names") or [x.name])]
        model.replace_output(quant.output(0), new.output(0))
        return True


class ConcatFusion(p.MatcherPass):
    """Quantize(Concat(Dequantize(q_1), ..., Dequantize(q_n))) -> QuantizedConcat(q_1, ..., q_n):
    the QDQ graph's arithmetic exactly (inputs on the output's grid are copied, others mapped
    through a table of their 256 values), with no f32 tensor in between (GoogLeNet, Inception,
    SqueezeNet and DenseNet concatenate the quantized branches of every block)."""

    name: ClassVar[str] = "cpu_int8_concat"

    def pattern(self) -> p.PatternNode:
        return p.op(Quantize, p.op("Concat"))

    def callback(self, match: p.Match, model: Model) -> bool:
        quant = match.root.node
        cat = quant.inputs[0].node
        uses = model.consumers()
        deqs = [i.node for i in cat.inputs]
        if (not cat.op.is_standard or _single_user(uses, cat.output(0)) is not quant
                or not all(_is(d, Dequantize) for d in deqs)):
            return False
        a = quant.attrs
        attrs = {"axis": cat.attrs.axis, "scales": [float(d.attrs.scale) for d in deqs],  # type: ignore[attr-defined]
                 "zero_points": [int(d.attrs.zero_point) for d in deqs],  # type: ignore[attr-defined]
                 "dst_scale": float(a.scale), "dst_zero_point": int(a.zero_point),  # type: ignore[attr-defined]
                 "output_type": a.output_type}  # type: ignore[attr-defined]
        new = Node.create(QuantizedConcat, [d.inputs[0] for d in deqs], attrs, name=quant.name)
        new.rt_info["fused_names"] = _fused_names(*deqs, cat, quant)
        model.replace_output(quant.output(0), new.output(0))
        return True


class LookupFusion(p.MatcherPass):
    """Quantize(f(Dequantize(q))) where f is a chain of element-wise ops of one tensor and scalar
    constants (Sigmoid, HardSigmoid, ...) -> QuantizedLookup(q, table): the chain's result depends
    on q's byte alone, so it is evaluated once, on the 256 values, with each op's reference."""

    name: ClassVar[str] = "cpu_int8_lookup"

    def pattern(self) -> p.PatternNode:
        return p.op(Quantize, predicate=lambda out: out.partial_shape.is_static)

    def callback(self, match: p.Match, model: Model) -> bool:
        quant = match.root.node
        uses = model.consumers()
        chain: list[Node] = []
        cur = quant.inputs[0]
        while not _is(cur.node, Dequantize):
            n = cur.node
            data = _elementwise_data(n)
            if data is None or _single_user(uses, cur) is not (chain[-1] if chain else quant):
                return False
            chain.append(n)
            cur = data
        deq = cur.node
        if not chain:
            return False
        values = np.arange(256, dtype=np.uint8)
        if deq.inputs[0].element_type is Type.i8:
            values = values.view(np.int8)
        v = Dequantize.evaluate(deq.attrs, [values])[0]
        for n in reversed(chain):
            ins = [v if i.node.constant_value() is None else np.asarray(i.node.constant_value()) for i in n.inputs]
            v = np.asarray(n.op.evaluate(n.attrs, ins)[0], np.float32).reshape(-1)
            if v.size != 256:
                return False
        table = Quantize.evaluate(quant.attrs, [v])[0]
        t = Node.create(Constant, [], {"value": np.ascontiguousarray(table)}, name=f"{quant.name}/table")
        new = Node.create(QuantizedLookup, [deq.inputs[0], t.output(0)], {}, name=quant.name)
        new.rt_info["fused_names"] = _fused_names(deq, *reversed(chain), quant)
        model.replace_output(quant.output(0), new.output(0))
        return True


def _elementwise_data(n: Node) -> Output | None:
    """The one tensor input of standard element-wise op ``n`` whose other inputs are scalar
    constants, when its f32 result has that input's shape; else None."""
    if not n.op.is_standard or not issubclass(n.op, (UnaryElementwise, BinaryElementwise)):
        return None
    if len(n.outputs()) != 1 or n.output(0).element_type is not Type.f32:
        return None
    data = [i for i in n.inputs if i.node.constant_value() is None]
    if len(data) != 1 or data[0].element_type is not Type.f32 or tuple(data[0].shape) != tuple(n.output(0).shape):
        return None
    if any(np.asarray(i.node.constant_value()).size != 1 for i in n.inputs if i is not data[0]):
        return None
    return data[0]


class EltwiseFusion(p.MatcherPass):
    """Quantize(Dequantize(q_a) op Dequantize(q_b)), op Add/Subtract/Multiply -> QuantizedEltwise:
    a SiLU's x * sigmoid(x), a squeeze-excitation's per-channel product, a residual Add that no
    convolution took as its sum; the QDQ graph's arithmetic on the integers, no f32 tensor."""

    name: ClassVar[str] = "cpu_int8_eltwise"

    def pattern(self) -> p.PatternNode:
        return p.op(Quantize, p.op(["Add", "Subtract", "Multiply"]), predicate=lambda out: out.partial_shape.is_static)

    def callback(self, match: p.Match, model: Model) -> bool:
        quant = match.root.node
        op = quant.inputs[0].node
        if (not op.op.is_standard or len(op.inputs) != 2 or op.attrs.auto_broadcast == "pdpd"  # type: ignore[attr-defined]
                or _single_user(model.consumers(), op.output(0)) is not quant):
            return False
        da, db = (i.node for i in op.inputs)
        if not (_is(da, Dequantize) and _is(db, Dequantize)):
            return False
        q = quant.attrs
        attrs = {"operation": op.type_name,
                 "a_scale": float(da.attrs.scale), "a_zero_point": int(da.attrs.zero_point),  # type: ignore[attr-defined]
                 "b_scale": float(db.attrs.scale), "b_zero_point": int(db.attrs.zero_point),  # type: ignore[attr-defined]
                 "dst_scale": float(q.scale), "dst_zero_point": int(q.zero_point),  # type: ignore[attr-defined]
                 "output_type": q.output_type}  # type: ignore[attr-defined]
        fa, fb = _byte_function(da.inputs[0]), _byte_function(db.inputs[0])
        if fa is not None and fb is not None and fa[0] == fb[0]:
            # both operands are functions of one tensor's byte (a SiLU's x * sigmoid(x), a
            # hard swish's x * hsigmoid(x)): so is the result, one table
            values = np.arange(256, dtype=np.uint8)
            table = QuantizedEltwise.evaluate(QuantizedEltwise.make_attrs(quant.name, attrs), [fa[1][values], fb[1][values]])[0]
            t = Node.create(Constant, [], {"value": np.ascontiguousarray(table)}, name=f"{quant.name}/table")
            new = Node.create(QuantizedLookup, [fa[0], t.output(0)], {}, name=quant.name)
            tables = [x for x in (da.inputs[0].node, db.inputs[0].node) if _is(x, QuantizedLookup)]
            new.rt_info["fused_names"] = _fused_names(*tables, da, db, op, quant)
        else:
            new = Node.create(QuantizedEltwise, [da.inputs[0], db.inputs[0]], attrs, name=quant.name)
            new.rt_info["fused_names"] = _fused_names(da, db, op, quant)
        model.replace_output(quant.output(0), new.output(0))
        return True


def _byte_function(out: Output) -> tuple[Output, np.ndarray] | None:
    """``out`` as a function of the bytes of a u8/i8 tensor ``q``: (q, its 256 values by byte),
    for q itself or a QuantizedLookup of it."""
    n = out.node
    if _is(n, QuantizedLookup):
        table = n.inputs[1].node.constant_value()
        return None if table is None else (n.inputs[0], np.asarray(table))
    if out.element_type not in _INT8:
        return None
    return out, np.arange(256, dtype=np.uint8).view(np.int8 if out.element_type is Type.i8 else np.uint8)


class AvgPoolFusion(p.MatcherPass):
    """Quantize(AvgPool(Dequantize(q))) and Quantize(ReduceMean(Dequantize(q)) over the spatial axes,
    kept) of a 2D image -> QuantizedAvgPool(q): the window sums taken on the integers, exactly,
    in the producer's channels-last layout (Inception's and DenseNet's pools, every
    squeeze-excitation's global average)."""

    name: ClassVar[str] = "cpu_int8_avg_pool"

    def pattern(self) -> p.PatternNode:
        # (ReduceMean has a second input, the axes: the pool is checked in the callback)
        return p.op(Quantize, predicate=lambda out: out.partial_shape.is_static)

    def callback(self, match: p.Match, model: Model) -> bool:
        quant = match.root.node
        pool = quant.inputs[0].node
        if not _std(pool, "AvgPool", "ReduceMean") or not _is(pool.inputs[0].node, Dequantize):
            return False
        deq = pool.inputs[0].node
        shape = tuple(deq.output(0).shape)
        if len(shape) != 4 or _single_user(model.consumers(), pool.output(0)) is not quant:
            return False
        if pool.type_name == "ReduceMean":
            axes = pool.inputs[1].node.constant_value()
            if axes is None or sorted(int(a) % 4 for a in np.asarray(axes).reshape(-1)) != [2, 3] or not pool.attrs.keep_dims:  # type: ignore[attr-defined]
                return False
            window = {"kernel": list(shape[2:]), "strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0],
                      "exclude_pad": False, "window_begin": [0, 0], "window_end": [0, 0]}
        else:
            a = pool.attrs
            begin, end, _ = pool_geometry(shape[2:], a.kernel, a.strides, [1, 1], a.pads_begin, a.pads_end,  # type: ignore[attr-defined]
                                          a.auto_pad, a.rounding_type)  # type: ignore[attr-defined]
            window = a.model_dump() | {"window_begin": begin, "window_end": end}
        q = quant.attrs
        attrs = window | {"src_scale": float(deq.attrs.scale), "src_zero_point": int(deq.attrs.zero_point),  # type: ignore[attr-defined]
                          "dst_scale": float(q.scale), "dst_zero_point": int(q.zero_point),  # type: ignore[attr-defined]
                          "output_type": q.output_type}  # type: ignore[attr-defined]
        new = Node.create(QuantizedAvgPool, [deq.inputs[0]], attrs, name=quant.name)
        new.rt_info["fused_names"] = _fused_names(deq, pool, quant)
        model.replace_output(quant.output(0), new.output(0))
        return True


class MovementFusion(p.MatcherPass):
    """Dequantize(q) -> an op that only moves elements (Reshape, Transpose, Squeeze, Slice...,
    Split) -> Quantize on each output, with one scale, zero point and type on both sides -> the
    op on q itself: exact (a moved element keeps its byte), and no f32 tensor (ShuffleNet's
    channel shuffle: Reshape, Transpose, Reshape, Split between its quantized convolutions)."""

    name: ClassVar[str] = "cpu_int8_movement"

    def pattern(self) -> p.PatternNode:
        return p.op(Dequantize)

    def callback(self, match: p.Match, model: Model) -> bool:
        deq = match.root.node
        uses = model.consumers()
        key = (float(deq.attrs.scale), int(deq.attrs.zero_point), deq.inputs[0].element_type)  # type: ignore[attr-defined]
        for m, port in uses.get(deq.output(0), []):
            # (a Pad's pad value is a real number, not a byte: never taken)
            # (Split and VariadicSplit only move elements too, but declare nothing: several outputs)
            moves = (m.op.rearranges_input and m.type_name != "Pad") or m.type_name in ("Split", "VariadicSplit")
            if (not m.op.is_standard or not moves or port != 0 or not all(o.partial_shape.is_static for o in m.outputs())
                    or any(i.node.constant_value() is None for i in m.inputs[1:])):
                continue
            quants = [q for q in (_single_user(uses, o) for o in m.outputs()) if q is not None and _is(q, Quantize)
                      and (float(q.attrs.scale), int(q.attrs.zero_point), q.output(0).element_type) == key]  # type: ignore[attr-defined]
            if len(quants) != len(m.outputs()):
                continue
            new = Node.create(m.op, [deq.inputs[0], *m.inputs[1:]], m.attrs.model_dump(), name=m.name)
            for i, q in enumerate(quants):
                model.replace_output(q.output(0), new.output(i))
            new.rt_info["fused_names"] = _fused_names(deq, m, *quants)
            return True
        return False


def _fused_names(*nodes: Node) -> list[str]:
    """The original nodes behind ``nodes`` (their own fused names, or themselves), each once."""
    names: list[str] = []
    for n in nodes:
        for name in n.rt_info.get("fused_names") or [n.name]:
            if name not in names:
                names.append(name)
    return names


class Int8Fusion(p.GraphRewrite):
    """The CPU's int8 pass: quantized convolutions and MatMuls first (they absorb the quantize
    and dequantize chains around them), then the chains left over become Quantize/Dequantize,
    then residual Adds between them go into the convolution before them, and max and average
    poolings, concatenations, element moves (Reshape, Transpose, Split...), element-wise chains of one tensor (tables) and Add/Multiply of two between
    them run on the integers."""

    name: ClassVar[str] = "cpu_int8_fusion"

    def __init__(self) -> None:
        super().__init__(QuantizedOpFusion(), QuantizeFusion(), DequantizeFusion(), ResidualSumFusion(),
                         MaxPoolFusion(), ConcatFusion(), LookupFusion(), EltwiseFusion(), AvgPoolFusion(),
                         MovementFusion())


def fuse_int8(model: Model) -> bool:
    """Apply the int8 fusion to a static-shape model; whether anything changed."""
    return Int8Fusion().apply(model)
