"""The QuantizeLinear and DequantizeLinear decompositions no quantized op absorbed -> one
Quantize / Dequantize node each."""

from __future__ import annotations

from typing import ClassVar

from opforge.graph import Model, Node
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.passes.int8.qdq_patterns import dequantized, quantize_chain


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
