"""An element-wise chain of one dequantized tensor, quantized -> a 256-entry table (QuantizedLookup)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.opset._elementwise import BinaryElementwise, UnaryElementwise
from opforge.opset.constant import Constant
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.ops.quantized_lookup import QuantizedLookup
from opforge_cpu.passes.int8.qdq_patterns import fused_names, is_op, single_user


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
        while not is_op(cur.node, Dequantize):
            n = cur.node
            data = _elementwise_data(n)
            if data is None or single_user(uses, cur) is not (chain[-1] if chain else quant):
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
        new.rt_info["fused_names"] = fused_names(deq, *reversed(chain), quant)
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
