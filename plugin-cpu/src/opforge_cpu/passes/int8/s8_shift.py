"""s8 sources on hosts without VNNI: convolutions and MatMuls read u8 bytes shifted by us instead.

On such hosts (``no_vnni.pairs_saturate``) oneDNN 3.2's int8 convolutions (dense, grouped and
depthwise) and deconvolutions, given an **s8** source, shift it to u8 themselves and halve the
weights once more in their weight reorder (the 0.5 "scale adjust" that keeps u8 x s8 pairs from
saturating int16): on top of the 7-bit rounding of ``no_vnni.seven_bit`` the layer ran with 6-bit
weights, 2-5 output steps from ONNX Runtime on the 7-bit model of one layer (depthwise 2, dense
and grouped 4-5, ConvTranspose 4; tests/test_cpu_int8_s8_shift.py). Given a **u8** source
with a zero point they halve nothing (the weights are 7-bit already), so this pass gives them one:
x_u8 = x_s8 + 128 with the source zero point moved by +128, the same real value
s * (x_s8 - z) = s * (x_u8 - (z + 128)). oneDNN's source zero point (or its fold into the bias
over a source the kernel pads with the zero point, quantized_convolution.cpp) keeps the padding a
real 0. oneDNN's int8 matmul is exact on s8 sources there (``gemm:jit`` / ``brg:avx512_core``),
but the AVX2 ``gemm:jit`` of an s8 source is slow: MobileNetV2's 1 x 1280 x 1000 classifier took
8.7 ms capped to AVX2 (1 thread), 0.087 ms over the shifted u8 bytes (0.128 on the u8 QDQ copy),
so MatMuls get u8 sources too (AVX-512 without VNNI: 0.031 / 0.027 ms, either is fine).

Where the bytes come from matters for the cost. The shift is free where the producer and every
reader of the s8 tensor take it in their attributes: a Quantize, a quantized convolution/MatMul
or a byte-wise op that requantizes (average pool, resize, scale-shift, Add/Multiply,
concatenation) then writes u8 with its output zero point + 128 (the same rounding and
saturation, moved by 128), a table (QuantizedLookup) gets its entries moved; a Dequantize, a
quantized or requantizing op's input reads it with that input's zero point + 128, a table with
its entries rolled by 128. Max pooling and element moves (Reshape, Transpose, Split...) pass the
shifted bytes on (both commute with + 128), and a residual operand has its convolution's output
type, so the tensors they connect shift together: a ResNet's residual chain (a convolution's
output that is the next one's source and the residual operand of the one after) is one such
component. A component with anything else in it (a model output, a Pad...) is left as it is, and
each convolution or MatMul reading an s8 tensor of it reads it through a 256-entry table instead
(QuantizedLookup, b -> b ^ 0x80: one pass over the tensor).

``OPFORGE_CPU_INT8_S8_SHIFT=0`` keeps the behaviour before stop 24 (the 6-bit weights)."""

from __future__ import annotations

import os
from typing import Any, ClassVar

import numpy as np
from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.opset.constant import Constant
from opforge.transformations.base import Transformation

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.ops.quantized_avg_pool import QuantizedAvgPool
from opforge_cpu.ops.quantized_concat import QuantizedConcat
from opforge_cpu.ops.quantized_convolution import QuantizedConvolution
from opforge_cpu.ops.quantized_convolution_backprop_data import QuantizedConvolutionBackpropData
from opforge_cpu.ops.quantized_eltwise import QuantizedEltwise
from opforge_cpu.ops.quantized_interpolate import QuantizedInterpolate
from opforge_cpu.ops.quantized_lookup import QuantizedLookup
from opforge_cpu.ops.quantized_mat_mul import QuantizedMatMul
from opforge_cpu.ops.quantized_max_pool import QuantizedMaxPool
from opforge_cpu.ops.quantized_scale_shift import QuantizedScaleShift
from opforge_cpu.passes.int8.no_vnni import pairs_saturate
from opforge_cpu.passes.int8.qdq_patterns import is_op

#: read once: "0" leaves s8 sources to oneDNN (their convolutions then run 6-bit weights on hosts
#: without VNNI, see the module docstring)
S8_SHIFT = os.environ.get("OPFORGE_CPU_INT8_S8_SHIFT", "1") != "0"
#: the byte shift: an s8 value v is the u8 byte v + 128, i.e. its bit pattern with the sign flipped
SHIFT = 128
#: the ops given u8 sources: those whose s8 source oneDNN halves the weights for without VNNI,
#: and the MatMul, exact on s8 but slow there (see the module docstring)
_TARGETS = (QuantizedConvolution, QuantizedConvolutionBackpropData, QuantizedMatMul)
#: ops reading input 0 with src_zero_point and writing with dst_zero_point / output_type
_SRC_DST = (QuantizedConvolution, QuantizedConvolutionBackpropData, QuantizedMatMul, QuantizedAvgPool,
            QuantizedInterpolate, QuantizedScaleShift)


def _is_any(node: Node, ops: tuple[type, ...]) -> bool:
    return any(is_op(node, op) for op in ops)


def _moves(node: Node) -> bool:
    """A standard op that only moves the elements of its input 0 (its other inputs constant),
    or a max pooling: the shifted bytes come out shifted. (Not Pad: its pad value is a number,
    not a byte.)"""
    if is_op(node, QuantizedMaxPool):
        return True
    moves = (node.op.rearranges_input and node.type_name != "Pad") or node.type_name in ("Split", "VariadicSplit")
    return bool(node.op.is_standard and moves and all(i.node.constant_value() is not None for i in node.inputs[1:]))


def _table(node: Node) -> np.ndarray | None:
    """A QuantizedLookup's constant table."""
    v = node.inputs[1].node.constant_value()
    return None if v is None else np.asarray(v)


def _writes(p: Node) -> dict[str, Any] | None:
    """The attribute changes that make ``p`` write its s8 output as u8 bytes + 128 (a table's
    entries are its input 1, changed in _shift_component), or None when it cannot."""
    if is_op(p, Quantize):
        return {"output_type": "u8", "zero_point": int(p.attrs.zero_point) + SHIFT}  # type: ignore[attr-defined]
    if _is_any(p, (*_SRC_DST, QuantizedEltwise, QuantizedConcat)):
        return {"output_type": "u8", "dst_zero_point": int(p.attrs.dst_zero_point) + SHIFT}  # type: ignore[attr-defined]
    if is_op(p, QuantizedLookup) and _table(p) is not None:
        return {}
    return None


def _sum_port(u: Node) -> int:
    return int(getattr(u.attrs, "sum_input", -1))


def _reads(u: Node, port: int) -> dict[str, Any] | None:
    """The attribute changes that make ``u`` read the bytes + 128 at ``port`` as before, or None
    when it cannot (a table's index is moved in _shift_component)."""
    a: Any = u.attrs
    if is_op(u, Dequantize):
        return {"zero_point": int(a.zero_point) + SHIFT}
    if _is_any(u, _SRC_DST) and port == 0:
        return {"src_zero_point": int(a.src_zero_point) + SHIFT}
    if _is_any(u, _SRC_DST) and port == _sum_port(u):
        return {"sum_zero_point": int(a.sum_zero_point) + SHIFT}
    if is_op(u, QuantizedEltwise) and port in (0, 1):
        key = "a_zero_point" if port == 0 else "b_zero_point"
        return {key: int(getattr(a, key)) + SHIFT}
    if is_op(u, QuantizedConcat):
        return {}  # (zero_points, one per input: the list is built in _shift_component)
    if is_op(u, QuantizedLookup) and port == 0 and _table(u) is not None:
        return {}
    return None


def _component(seed: Output, uses: dict[Output, list[tuple[Node, int]]]) -> set[Output] | None:
    """The s8 tensors that must shift together with ``seed`` for every producer and reader among
    them to take the shift (see the module docstring); None when one cannot."""
    comp: set[Output] = set()
    todo = [seed]
    while todo:
        t = todo.pop()
        if t in comp:
            continue
        if t.element_type is not Type.i8:
            return None
        comp.add(t)
        p = t.node
        if _moves(p):
            todo.append(p.inputs[0])
        elif _writes(p) is None:
            return None
        elif _sum_port(p) >= 0:
            todo.append(p.inputs[_sum_port(p)])  # (the output has the residual operand's type)
        for u, port in uses.get(t, []):
            if _moves(u) and port == 0:
                todo.extend(u.outputs())
            elif _reads(u, port) is None:
                return None
            elif port == _sum_port(u):
                todo.append(u.output(0))
    return comp


def _update(node: Node, changes: dict[str, Any]) -> None:
    if changes:
        node.attrs = node.attrs.model_copy(update=changes)


def _const(value: np.ndarray, name: str) -> Output:
    return Node.create(Constant, [], {"value": np.ascontiguousarray(value)}, name=name).output(0)


def _shift_component(comp: set[Output], uses: dict[Output, list[tuple[Node, int]]], order: dict[int, int]) -> None:
    """Makes every tensor of ``comp`` u8 (its producer writes x + 128) and moves the zero points
    of its readers by +128; then re-infers the touched nodes' outputs, producers first."""
    touched: dict[int, Node] = {}
    for t in comp:
        p = t.node
        touched[p.id] = p
        if not _moves(p):
            _update(p, _writes(p) or {})
            if is_op(p, QuantizedLookup):
                entries = _table(p)
                if entries is not None:  # (checked by _writes) s8 entry v -> u8 byte v + 128
                    p.inputs[1] = _const(entries.view(np.uint8) ^ np.uint8(0x80), f"{p.name}/table/u8")
        for u, port in uses.get(t, []):
            touched[u.id] = u
            if _moves(u):
                continue
            _update(u, _reads(u, port) or {})
            if is_op(u, QuantizedConcat):
                zps = list(u.attrs.zero_points)  # type: ignore[attr-defined]
                zps[port] += SHIFT
                _update(u, {"zero_points": zps})
            elif is_op(u, QuantizedLookup):
                entries = _table(u)
                if entries is not None:  # (checked by _reads) the entry of byte b is now read at b ^ 0x80
                    u.inputs[1] = _const(np.roll(entries, SHIFT), f"{u.name}/table/from_u8")
    for n in sorted(touched.values(), key=lambda n: order[n.id]):
        n.validate_and_infer()


def _table_shift(t: Output, readers: list[Node]) -> None:
    """``readers`` (convolutions and MatMuls at port 0) read ``t`` through a QuantizedLookup that writes its
    bytes + 128 as u8, with their source zero points moved by +128."""
    table = np.arange(256, dtype=np.uint8) ^ np.uint8(0x80)  # the byte of s8 v -> v + 128
    shift = Node.create(QuantizedLookup, [t, _const(table, f"{t.node.name}/s8_to_u8/table")], {},
                        name=f"{t.node.name}/s8_to_u8")
    for r in readers:
        r.inputs[0] = shift.output(0)
        _update(r, {"src_zero_point": int(r.attrs.src_zero_point) + SHIFT})  # type: ignore[attr-defined]
        r.validate_and_infer()


def shift_s8_sources(model: Model) -> bool:
    """Gives every quantized (de)convolution and MatMul reading an s8 tensor a u8 one (see the
    module docstring), on a host without VNNI with the switch on; whether anything changed."""
    if not (S8_SHIFT and pairs_saturate()):
        return False
    ops = model.get_ordered_ops()
    seeds = [n.inputs[0] for n in ops if _is_any(n, _TARGETS) and n.inputs[0].element_type is Type.i8]
    if not seeds:
        return False
    order = {n.id: k for k, n in enumerate(ops)}
    uses = model.consumers()
    done: set[Output] = set()
    for seed in seeds:
        if seed in done:
            continue
        comp = _component(seed, uses)
        if comp is not None:
            _shift_component(comp, uses, order)
            done |= comp
        else:
            _table_shift(seed, [u for u, port in uses.get(seed, []) if _is_any(u, _TARGETS) and port == 0])
            done.add(seed)
    return True


class S8SourceShift(Transformation):
    """:func:`shift_s8_sources` after the int8 fusions (and the other fusions of order 100, which
    may still move int8 tensors), before the lowering of f16/bf16."""

    name: ClassVar[str] = "cpu_int8_s8_shift"
    order: ClassVar[int] = 110

    def apply(self, model: Model) -> bool:
        return shift_s8_sources(model)
