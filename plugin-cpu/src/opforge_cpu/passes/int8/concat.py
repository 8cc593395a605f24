"""Concat of dequantized tensors, quantized -> QuantizedConcat."""

from __future__ import annotations

from typing import ClassVar

from opforge.graph import Model, Node
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.ops.quantized_concat import QuantizedConcat
from opforge_cpu.passes.int8.qdq_patterns import fused_names, is_op, single_user


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
        if (not cat.op.is_standard or single_user(uses, cat.output(0)) is not quant
                or not all(is_op(d, Dequantize) for d in deqs)):
            return False
        a = quant.attrs
        attrs = {"axis": cat.attrs.axis, "scales": [float(d.attrs.scale) for d in deqs],  # type: ignore[attr-defined]
                 "zero_points": [int(d.attrs.zero_point) for d in deqs],  # type: ignore[attr-defined]
                 "dst_scale": float(a.scale), "dst_zero_point": int(a.zero_point),  # type: ignore[attr-defined]
                 "output_type": a.output_type}  # type: ignore[attr-defined]
        new = Node.create(QuantizedConcat, [d.inputs[0] for d in deqs], attrs, name=quant.name)
        new.rt_info["fused_names"] = fused_names(*deqs, cat, quant)
        model.replace_output(quant.output(0), new.output(0))
        return True
