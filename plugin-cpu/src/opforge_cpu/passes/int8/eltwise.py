"""Add/Subtract/Multiply of two dequantized tensors, quantized -> QuantizedEltwise (or one table)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.opset.constant import Constant
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.ops.quantized_eltwise import QuantizedEltwise
from opforge_cpu.ops.quantized_lookup import QuantizedLookup
from opforge_cpu.passes.int8.qdq_patterns import INT8_RANGES, fused_names, is_op, single_user


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
                or single_user(model.consumers(), op.output(0)) is not quant):
            return False
        da, db = (i.node for i in op.inputs)
        if not (is_op(da, Dequantize) and is_op(db, Dequantize)):
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
            tables = [x for x in (da.inputs[0].node, db.inputs[0].node) if is_op(x, QuantizedLookup)]
            new.rt_info["fused_names"] = fused_names(*tables, da, db, op, quant)
        else:
            new = Node.create(QuantizedEltwise, [da.inputs[0], db.inputs[0]], attrs, name=quant.name)
            new.rt_info["fused_names"] = fused_names(da, db, op, quant)
        model.replace_output(quant.output(0), new.output(0))
        return True


def _byte_function(out: Output) -> tuple[Output, np.ndarray] | None:
    """``out`` as a function of the bytes of a u8/i8 tensor ``q``: (q, its 256 values by byte),
    for q itself or a QuantizedLookup of it."""
    n = out.node
    if is_op(n, QuantizedLookup):
        table = n.inputs[1].node.constant_value()
        return None if table is None else (n.inputs[0], np.asarray(table))
    if out.element_type not in INT8_RANGES:
        return None
    return out, np.arange(256, dtype=np.uint8).view(np.int8 if out.element_type is Type.i8 else np.uint8)
