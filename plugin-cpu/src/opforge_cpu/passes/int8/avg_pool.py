"""AvgPool / spatial ReduceMean of a dequantized image, quantized -> QuantizedAvgPool."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from opforge.graph import Model, Node
from opforge.opset._pool import pool_geometry
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.ops.quantized_avg_pool import QuantizedAvgPool
from opforge_cpu.passes.int8.qdq_patterns import fused_names, is_op, is_standard, single_user


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
        if not is_standard(pool, "AvgPool", "ReduceMean") or not is_op(pool.inputs[0].node, Dequantize):
            return False
        deq = pool.inputs[0].node
        shape = tuple(deq.output(0).shape)
        if len(shape) != 4 or single_user(model.consumers(), pool.output(0)) is not quant:
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
        new.rt_info["fused_names"] = fused_names(deq, pool, quant)
        model.replace_output(quant.output(0), new.output(0))
        return True
