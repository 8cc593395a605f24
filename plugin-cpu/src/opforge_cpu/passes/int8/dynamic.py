"""ONNX Runtime's dynamic quantization (``quantize_dynamic``: DynamicQuantizeLinear ->
MatMulInteger -> Cast -> Mul(scale) per MatMul, the documented int8 recipe for transformers) as
int8 steps instead of its i32/f32 decomposition:

* ``DynamicQuantizeFusion``: the frontend's inlined DynamicQuantizeLinear function body (the
  guarded ReduceMax/ReduceMin of x with 0, the scale (hi - lo) / 255, the zero point
  round(clamp(0 - lo / scale, 0, 255)) and the QuantizeLinear chain Divide, Round, Add, Clamp,
  Convert) -> one DynamicQuantize (three outputs: y, scale, zero point).
* ``IntegerMatMulFusion``: the frontend's MatMulInteger, ``MatMul(Convert(q, i32) [- Convert(z,
  i32)], W_i32)`` with W a constant whose zero-point-centred values fit i8 and z one value (a
  run-time tensor: DynamicQuantizeLinear's zero point), -> one IntegerMatMul on oneDNN's int8
  matmul, exact i32 sums; with the ``Convert(f32) * s`` that follows (s one f32 value) fused as
  its f32 epilogue, computed in the same order (the exact sum converted once, one product), and
  a bias Add of one constant per output column after it (a second rounding, as the Add's).
* ``IntegerConvolutionFusion``: the frontend's ConvInteger (one group, 1-D or 2-D), the i32
  Convolution of the same centred source and constant i8-range filters, -> one
  IntegerConvolution (im2col + the same int8 matmul, exact i32 sums).

Hosts whose int8 kernels add u8 x s8 pairs in saturating int16 (no VNNI: ``no_vnni``) take the
MatMul or convolution only for a u8 source and weights within +-64, where no pair can saturate;
anything else keeps the exact integer loops. ``OPFORGE_CPU_INT8_DYNAMIC=0`` turns all three
rewrites off (read once).
"""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.opset.constant import Constant
from opforge.transformations import pattern as p

from opforge_cpu.ops.dynamic_quantize import DynamicQuantize
from opforge_cpu.ops.integer_convolution import IntegerConvolution
from opforge_cpu.ops.integer_mat_mul import IntegerMatMul
from opforge_cpu.passes.int8.no_vnni import PAIR_SAFE_WEIGHT, pairs_saturate
from opforge_cpu.passes.int8.qdq_patterns import INT8_RANGES, converted_int8, is_standard, single_user

#: read once: "0" leaves dynamically quantized graphs to the decomposed (exact integer) path
ENABLED = os.environ.get("OPFORGE_CPU_INT8_DYNAMIC", "1") != "0"

F32_MAX = float(np.finfo(np.float32).max)


def _const(out: Output) -> float | None:
    """A one-element constant's value."""
    v = out.node.constant_value()
    if v is None or v.size != 1:
        return None
    return float(np.asarray(v).reshape(-1)[0])


def _pair(node: Node, value: float) -> Output | None:
    """The input of binary ``node`` other than the constant ``value`` (either order)."""
    a, b = node.inputs
    if _const(b) == value:
        return a
    if _const(a) == value:
        return b
    return None


def _one_value(out: Output) -> bool:
    return out.partial_shape.is_static and int(np.prod(out.partial_shape.to_tuple(), dtype=np.int64)) == 1


def _full_reduce(out: Output, kind: str, x: Output) -> bool:
    """``out`` is ``Reduce<kind>(x)`` over every axis without kept dims, optionally behind the
    frontend's empty-reduction guard ``Select(Equal(r, -+F32_MAX) and not any(x == -+F32_MAX),
    -+inf, r)`` (which changes nothing for a tensor with an element)."""
    n = out.node
    limit = -F32_MAX if kind == "ReduceMax" else F32_MAX
    if is_standard(n, "Select"):
        r = n.inputs[2]
        if _const(n.inputs[1]) != (-np.inf if kind == "ReduceMax" else np.inf):
            return False
        cond = n.inputs[0].node
        if not is_standard(cond, "LogicalAnd"):
            return False
        eq, neg = cond.inputs[0].node, cond.inputs[1].node
        if not (is_standard(eq, "Equal") and eq.inputs[0] == r and _const(eq.inputs[1]) == limit):
            return False
        if not is_standard(neg, "LogicalNot"):
            return False
        anyn = neg.inputs[0].node
        if not is_standard(anyn, "ReduceLogicalOr") or anyn.attrs.keep_dims:  # type: ignore[attr-defined]
            return False
        eqx = anyn.inputs[0].node
        if not (is_standard(eqx, "Equal") and eqx.inputs[0] == x and _const(eqx.inputs[1]) == limit):
            return False
        if not _all_axes(anyn, x):
            return False
        n = r.node
    return is_standard(n, kind) and n.inputs[0] == x and not n.attrs.keep_dims and _all_axes(n, x)  # type: ignore[attr-defined]


def _all_axes(n: Node, x: Output) -> bool:
    axes = n.inputs[1].node.constant_value()
    rank = len(x.partial_shape.to_tuple())
    return axes is not None and sorted(int(a) % max(rank, 1) for a in np.asarray(axes).reshape(-1)) == list(range(rank))


def _clamp_0_255(n: Node) -> bool:
    return is_standard(n, "Clamp") and float(n.attrs.min) == 0.0 and float(n.attrs.max) == 255.0  # type: ignore[attr-defined]


def _round_even(n: Node) -> bool:
    return is_standard(n, "Round") and str(n.attrs.mode) == "half_to_even"  # type: ignore[attr-defined]


class DynamicQuantizeFusion(p.MatcherPass):
    """The inlined DynamicQuantizeLinear -> one DynamicQuantize (anchored on its u8 Convert)."""

    name: ClassVar[str] = "cpu_int8_dynamic_quantize"

    def pattern(self) -> p.PatternNode:
        return p.op(["Convert"], p.capture("v"), predicate=lambda out: out.node.op.is_standard and out.element_type is Type.u8)

    def callback(self, match: p.Match, model: Model) -> bool:
        if not ENABLED:
            return False
        y = match.root
        clamp = match["v"].node
        if not _clamp_0_255(clamp):
            return False
        add = clamp.inputs[0].node
        if not is_standard(add, "Add"):
            return False
        for rounded, zf in ((add.inputs[0], add.inputs[1]), (add.inputs[1], add.inputs[0])):
            got = self._quantized(rounded, zf)
            if got is not None:
                break
        else:
            return False
        x, scale, zp = got
        if x.element_type is not Type.f32 or not x.partial_shape.is_static:
            return False
        new = Node.create(DynamicQuantize, [x], {}, name=y.node.name)
        new.rt_info["fused_names"] = [y.node.name, scale.node.name, zp.node.name]
        model.replace_output(y, new.output(0))
        model.replace_output(scale, new.output(1))
        model.replace_output(zp, new.output(2))
        return True

    @staticmethod
    def _quantized(rounded: Output, zf: Output) -> tuple[Output, Output, Output] | None:
        """``rounded`` = Round(Divide(x, s)) and ``zf`` = Convert(z, f32) with s and z
        DynamicQuantizeLinear's scale and zero point of x: (x, s, z)."""
        r = rounded.node
        if not _round_even(r) or not is_standard(r.inputs[0].node, "Divide"):
            return None
        x, s = r.inputs[0].node.inputs
        zc = zf.node
        if not is_standard(zc, "Convert") or zf.element_type is not Type.f32:
            return None
        z = zc.inputs[0]
        if z.element_type is not Type.u8:
            return None
        # s = (max(rmax(x), 0) - min(rmin(x), 0)) / 255
        div = s.node
        if not is_standard(div, "Divide") or _const(div.inputs[1]) != 255.0:
            return None
        sub = div.inputs[0].node
        if not is_standard(sub, "Subtract"):
            return None
        mx, mn = sub.inputs[0].node, sub.inputs[1].node
        if not (is_standard(mx, "Maximum") and is_standard(mn, "Minimum")):
            return None
        rmax, rmin = _pair(mx, 0.0), _pair(mn, 0.0)
        if rmax is None or rmin is None or not _full_reduce(rmax, "ReduceMax", x) or not _full_reduce(rmin, "ReduceMin", x):
            return None
        # z = Convert_u8(Round(Clamp(0 - lo / s, 0, 255)))
        rz = z.node.inputs[0].node if is_standard(z.node, "Convert") else None
        if rz is None or not _round_even(rz) or not _clamp_0_255(rz.inputs[0].node):
            return None
        neg = rz.inputs[0].node.inputs[0].node
        if not is_standard(neg, "Subtract") or _const(neg.inputs[0]) != 0.0:
            return None
        ratio = neg.inputs[1].node
        if not (is_standard(ratio, "Divide") and ratio.inputs[0] == mn.output(0) and ratio.inputs[1] == s):
            return None
        return x, s, z


class IntegerMatMulFusion(p.MatcherPass):
    """MatMulInteger's i32 MatMul of a centred u8/i8 source and constant i8-range weights -> one
    IntegerMatMul, with a following ``Convert(f32) * scale`` as its f32 epilogue."""

    name: ClassVar[str] = "cpu_int8_integer_mat_mul"

    def pattern(self) -> p.PatternNode:
        return p.op(["MatMul"], p.capture("x"), p.capture("w"),
                    predicate=lambda out: out.node.op.is_standard and out.element_type is Type.i32
                    and out.partial_shape.is_static)

    def callback(self, match: p.Match, model: Model) -> bool:
        if not ENABLED:
            return False
        node = match.root.node
        x = match["x"]
        wv = match["w"].node.constant_value()
        if node.attrs.transpose_a or wv is None or wv.ndim not in (2, 3) or not x.partial_shape.is_static:  # type: ignore[attr-defined]
            return False
        xs = x.partial_shape.to_tuple()
        if len(xs) < 2 or 0 in xs:
            return False  # (an empty source: the exact loop's business)
        if wv.ndim == 3 and (len(xs) != 3 or xs[0] != wv.shape[0]):
            return False  # [B, K, N] weights: one per batch of a [B, M, K] source only
        w = np.swapaxes(wv, -1, -2) if node.attrs.transpose_b else wv  # type: ignore[attr-defined]
        if w.dtype != np.int32 or w.size == 0 or int(w.min()) < -128 or int(w.max()) > 127:
            return False
        src = self._source(x)
        if src is None:
            return False
        q, zp = src
        if pairs_saturate() and (q.element_type is not Type.u8 or int(np.abs(w).max()) > PAIR_SAFE_WEIGHT):
            return False  # see no_vnni: the int16 pair sums could saturate; the exact loop stays
        uses = model.consumers()
        ins = [q, Node.create(Constant, [], {"value": np.ascontiguousarray(w.astype(np.int8))},
                              name=f"{node.name}/int8/weights").output(0)]
        if zp is not None:
            ins.append(zp)
        fused = [node]
        out = match.root
        attrs: dict[str, object] = {"has_zero_point": zp is not None, "output_type": "i32"}
        cv = single_user(uses, out)
        if cv is not None and is_standard(cv, "Convert") and cv.output(0).element_type is Type.f32:
            mul = single_user(uses, cv.output(0))
            if mul is not None and is_standard(mul, "Multiply") and mul.output(0).element_type is Type.f32:
                other = mul.inputs[1] if mul.inputs[0] == cv.output(0) else mul.inputs[0]
                if (other.element_type is Type.f32 and _one_value(other)
                        and tuple(mul.output(0).partial_shape.to_tuple()) == tuple(out.partial_shape.to_tuple())):
                    ins.append(other)
                    attrs["output_type"] = "f32"
                    fused += [cv, mul]
                    out = mul.output(0)
                    bias = self._bias(uses, out, int(w.shape[-1]))
                    if bias is not None:
                        add, b = bias
                        ins.append(Node.create(Constant, [], {"value": b}, name=f"{node.name}/int8/bias").output(0))
                        attrs["has_bias"] = True
                        fused.append(add)
                        out = add.output(0)
        new = Node.create(IntegerMatMul, ins, attrs, name=out.node.name)
        new.rt_info["fused_names"] = [n.name for n in fused]
        model.replace_output(out, new.output(0))
        return True

    @staticmethod
    def _bias(uses: dict[Output, list[tuple[Node, int]]], y: Output, n: int) -> tuple[Node, np.ndarray] | None:
        """The only reader of ``y`` as ``y + b`` with b an f32 constant of one value per output
        column (shape [N] or [1, ..., N]) that leaves y's shape: (the Add, b as [N])."""
        add = single_user(uses, y)
        if add is None or not is_standard(add, "Add") or add.output(0).element_type is not Type.f32:
            return None
        other = add.inputs[1] if add.inputs[0] == y else add.inputs[0]
        v = other.node.constant_value()
        if v is None or v.dtype != np.float32 or v.size != n or not 1 <= v.ndim <= len(y.partial_shape.to_tuple()):
            return None
        if any(d != 1 for d in v.shape[:-1]) or v.shape[-1] != n:
            return None
        if tuple(add.output(0).partial_shape.to_tuple()) != tuple(y.partial_shape.to_tuple()):
            return None
        return add, np.ascontiguousarray(v.reshape(-1))

    @staticmethod
    def _source(x: Output) -> tuple[Output, Output | None] | None:
        """``x`` as ``Convert(q, i32) [- z]``: q (u8/i8) and its zero point as a one-value u8/i8
        tensor (a run-time ``Convert(z, i32)``'s input, or a new constant for a constant), or None
        for no zero point."""
        got = converted_int8(x)
        if got is None:
            return None
        q, z = got
        if z is None:
            return q, None
        if not _one_value(z):
            return None
        zn = z.node
        if is_standard(zn, "Convert") and zn.inputs[0].element_type in INT8_RANGES:
            return q, zn.inputs[0]  # (the kernel reads it in its own type, u8 or i8)
        v = zn.constant_value()
        if v is None:
            return None
        lo, hi = INT8_RANGES[q.element_type]
        zv = int(np.asarray(v).reshape(-1)[0])
        if not lo <= zv <= hi:
            return None
        if zv == 0:
            return q, None
        zc = np.array(zv, np.uint8 if q.element_type is Type.u8 else np.int8)
        return q, Node.create(Constant, [], {"value": zc}, name=f"{x.node.name}/int8/zero_point").output(0)


class IntegerConvolutionFusion(p.MatcherPass):
    """ConvInteger's i32 Convolution / GroupConvolution (1-D or 2-D) of a centred u8/i8 source
    and constant i8-range filters -> one IntegerConvolution (exact i32 sums; the Cast/Mul/Add
    after it stay as they are). A grouped one only with at least ``MIN_GROUP_FILTERS`` filters
    per group: the kernel runs one matrix product per group, which for a depthwise convolution
    (one filter, a few taps) would be thousands of tiny products."""

    name: ClassVar[str] = "cpu_int8_integer_convolution"
    MIN_GROUP_FILTERS: ClassVar[int] = 16

    def pattern(self) -> p.PatternNode:
        return p.op(["Convolution", "GroupConvolution"], p.capture("x"), p.capture("w"),
                    predicate=lambda out: out.node.op.is_standard and out.element_type is Type.i32
                    and out.partial_shape.is_static)

    def callback(self, match: p.Match, model: Model) -> bool:
        if not ENABLED:
            return False
        node = match.root.node
        x = match["x"]
        w = match["w"].node.constant_value()
        group = 1
        if w is not None and node.type_name == "GroupConvolution":
            # [G, O/G, C/G, k...] -> [O, C/G, k...]
            if w.ndim < 4 or w.shape[1] < self.MIN_GROUP_FILTERS:
                return False
            group = int(w.shape[0])
            w = w.reshape(w.shape[0] * w.shape[1], *w.shape[2:])
        if w is None or w.ndim not in (3, 4) or not x.partial_shape.is_static or len(x.partial_shape.to_tuple()) != w.ndim:
            return False
        if w.dtype != np.int32 or w.size == 0 or int(w.min()) < -128 or int(w.max()) > 127:
            return False
        if 0 in x.partial_shape.to_tuple() or w.shape[1] * group != x.partial_shape.to_tuple()[1]:
            return False  # an empty source (the exact loop's business)
        src = IntegerMatMulFusion._source(x)
        if src is None:
            return False
        q, zp = src
        if pairs_saturate() and (q.element_type is not Type.u8 or int(np.abs(w).max()) > PAIR_SAFE_WEIGHT):
            return False  # see no_vnni: the int16 pair sums could saturate; the exact loop stays
        ins = [q, Node.create(Constant, [], {"value": np.ascontiguousarray(w.astype(np.int8))},
                              name=f"{node.name}/int8/weights").output(0)]
        if zp is not None:
            ins.append(zp)
        a = node.attrs
        attrs = {k: getattr(a, k) for k in ("strides", "pads_begin", "pads_end", "dilations", "auto_pad")}
        attrs["has_zero_point"] = zp is not None
        attrs["group"] = group
        new = Node.create(IntegerConvolution, ins, attrs, name=node.name)
        new.rt_info["fused_names"] = [node.name]
        model.replace_output(match.root, new.output(0))
        return True
