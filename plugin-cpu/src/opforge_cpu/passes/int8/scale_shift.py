"""A BatchNormalization between a Dequantize and a Quantize -> QuantizedScaleShift."""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
from opforge.element_type import Type
from opforge.graph import Model, Node
from opforge.opset.constant import Constant
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.ops.quantized_scale_shift import QuantizedScaleShift, batch_norm_scale_shift
from opforge_cpu.passes.int8.qdq_patterns import fused_names, is_op, is_standard, single_user


class ScaleShiftFusion(p.MatcherPass):
    """Quantize([Relu](BatchNormInference(Dequantize(q), constants))) of an image [N, C, H, W]
    -> QuantizedScaleShift(q, scale, shift): DenseNet's pre-activation BN (ONNX Runtime's QDQ
    quantizer drops the Relu before a u8 quantize) read from and written to the u8 tensors, one
    pass over the bytes in the channels-last layout of the convolutions around it, where the
    Dequantize, BatchNormInference and Quantize kernels were three passes over plain f32 and the
    convolution after them reordered the plain u8 tensor back to channels-last.
    ``OPFORGE_CPU_INT8_SCALE_SHIFT=0`` keeps those three (for A/B runs)."""

    name: ClassVar[str] = "cpu_int8_scale_shift"

    def pattern(self) -> p.PatternNode:
        return p.op(Quantize, predicate=lambda out: out.partial_shape.is_static and out.partial_shape.rank == 4)

    def callback(self, match: p.Match, model: Model) -> bool:
        if os.environ.get("OPFORGE_CPU_INT8_SCALE_SHIFT", "1") == "0":
            return False
        quant = match.root.node
        uses = model.consumers()
        bn = quant.inputs[0].node
        relu: Node | None = None
        if is_standard(bn, "Relu"):
            if single_user(uses, bn.output(0)) is not quant:
                return False
            relu, bn = bn, bn.inputs[0].node
        if (not is_standard(bn, "BatchNormInference") or single_user(uses, bn.output(0)) is not (relu or quant)
                or any(uses.get(o) for o in bn.outputs()[1:])):
            return False
        deq = bn.inputs[0].node
        if not is_op(deq, Dequantize):
            return False
        params = [bn.inputs[i].node.constant_value() for i in range(1, 5)]
        if any(v is None for v in params) or any(bn.inputs[i].element_type is not Type.f32 for i in range(5)):
            return False
        channels = int(bn.inputs[0].shape[1])
        if any(np.asarray(v).shape != (channels,) for v in params):
            return False
        gamma, beta, mean, var = (np.asarray(v) for v in params)
        scale, shift = batch_norm_scale_shift(gamma, beta, mean, var, float(bn.attrs.epsilon))  # type: ignore[attr-defined]
        d, q = deq.attrs, quant.attrs
        attrs = {"src_scale": float(d.scale), "src_zero_point": int(d.zero_point),  # type: ignore[attr-defined]
                 "dst_scale": float(q.scale), "dst_zero_point": int(q.zero_point),  # type: ignore[attr-defined]
                 "output_type": q.output_type, "relu": relu is not None}  # type: ignore[attr-defined]
        s = Node.create(Constant, [], {"value": scale}, name=f"{quant.name}/scale")
        t = Node.create(Constant, [], {"value": shift}, name=f"{quant.name}/shift")
        new = Node.create(QuantizedScaleShift, [deq.inputs[0], s.output(0), t.output(0)], attrs, name=quant.name)
        new.rt_info["fused_names"] = fused_names(deq, bn, *([relu] if relu is not None else []), quant)
        model.replace_output(quant.output(0), new.output(0))
        return True
