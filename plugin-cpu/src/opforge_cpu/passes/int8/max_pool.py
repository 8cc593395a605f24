"""MaxPool between a Dequantize and a Quantize of one grid -> QuantizedMaxPool."""

from __future__ import annotations

from typing import ClassVar

from opforge.graph import Model, Node
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.ops.quantized_max_pool import QuantizedMaxPool
from opforge_cpu.passes.int8.qdq_patterns import single_user


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
        if (not pool.op.is_standard or quant.inputs[0].index != 0 or single_user(uses, pool.output(0)) is not quant
                or any(uses.get(o) for o in pool.outputs()[1:])
                or (deq.attrs.scale, deq.attrs.zero_point) != (quant.attrs.scale, quant.attrs.zero_point)  # type: ignore[attr-defined]
                or deq.inputs[0].element_type is not quant.output(0).element_type):
            return False
        new = Node.create(QuantizedMaxPool, [deq.inputs[0]], pool.attrs.model_dump(), name=quant.name)
        new.rt_info["fused_names"] = [n for x in (deq, pool, quant) for n in (x.rt_info.get("fused_names") or [x.name])]
        model.replace_output(quant.output(0), new.output(0))
        return True
