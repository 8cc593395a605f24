"""Ops that only move elements, between a Dequantize and Quantize of one grid -> the op on the bytes."""

from __future__ import annotations

from typing import ClassVar

from opforge.graph import Model, Node
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.passes.int8.qdq_patterns import fused_names, is_op, single_user


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
            quants = [q for q in (single_user(uses, o) for o in m.outputs()) if q is not None and is_op(q, Quantize)
                      and (float(q.attrs.scale), int(q.attrs.zero_point), q.output(0).element_type) == key]  # type: ignore[attr-defined]
            if len(quants) != len(m.outputs()):
                continue
            new = Node.create(m.op, [deq.inputs[0], *m.inputs[1:]], m.attrs.model_dump(), name=m.name)
            for i, q in enumerate(quants):
                model.replace_output(q.output(0), new.output(i))
            new.rt_info["fused_names"] = fused_names(deq, m, *quants)
            return True
        return False
