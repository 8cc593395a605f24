"""A residual Add of a quantized convolution's output -> that convolution's sum post-op."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from opforge.graph import Model, Node
from opforge.opset.constant import Constant
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.ops.quantized_convolution import QuantizedConvolution
from opforge_cpu.passes.int8.qdq_patterns import INT8_RANGES, is_op, is_standard, single_user


class ResidualSumFusion(p.MatcherPass):
    """Quantize([Relu](Dequantize(q_conv) + Dequantize(q_a))) where q_conv is a quantized
    convolution's own output and read only there -> that convolution with q_a added by oneDNN's
    sum post-op over its output buffer (a ResNet/MobileNetV2 residual block's end): no u8 ->
    f32 -> u8 round trip of both operands. Unlike the QDQ graph, the convolution's result is not
    rounded to its own u8 grid before the addition (as OpenVINO runs it too): the output may
    differ from ONNX Runtime's by one step where that rounding decided it. (It is clamped to that
    grid's range, as the QDQ graph saturates it.)"""

    name: ClassVar[str] = "cpu_int8_residual_sum"

    def pattern(self) -> p.PatternNode:
        return p.op(Quantize)

    def callback(self, match: p.Match, model: Model) -> bool:
        quant = match.root.node
        uses = model.consumers()
        tail = quant.inputs[0].node
        post: list[tuple[str, dict[str, float]]] = []
        fused = [quant]
        if is_standard(tail, "Relu") and single_user(uses, tail.output(0)) is quant:
            post.append(("Relu", {}))
            fused.append(tail)
            tail = tail.inputs[0].node
        if not is_standard(tail, "Add") or single_user(uses, tail.output(0)) is not fused[-1] or len(tail.inputs) != 2:
            return False
        out_type = quant.output(0).element_type
        for k in (0, 1):
            dq_conv, dq_other = tail.inputs[k].node, tail.inputs[1 - k].node
            if not (is_op(dq_conv, Dequantize) and is_op(dq_other, Dequantize)):
                return False
            conv = dq_conv.inputs[0].node
            q_a = dq_other.inputs[0]
            if (not is_op(conv, QuantizedConvolution) or conv.attrs.sum_input >= 0 or conv.attrs.post_ops  # type: ignore[attr-defined]
                    or conv.output(0).element_type is not out_type or q_a.element_type is not out_type
                    or tuple(q_a.shape) != tuple(conv.output(0).shape) or q_a == conv.output(0)
                    or single_user(uses, conv.output(0)) is not dq_conv
                    or single_user(uses, dq_conv.output(0)) is not tail):
                continue
            a = conv.attrs
            # The convolution's value v is written as round(v / dst_scale) + zp and read back by
            # dq_conv as s * (q - zp): in real units it is v * s / dst_scale. That factor is 1 in
            # a QDQ graph (v is real) but not for a QLinearConv, whose v is in y's steps
            # (dst_scale 1, the multiplier x_scale * w_scale / y_scale in the weight scales):
            # scale v (src_scale and bias) to real units, as the sum and dst_scale are.
            s, zp = float(dq_conv.attrs.scale), int(dq_conv.attrs.zero_point)  # type: ignore[attr-defined]
            if zp != int(a.dst_zero_point):  # type: ignore[attr-defined]
                continue
            to_real = s / float(a.dst_scale)  # type: ignore[attr-defined]
            params = list(conv.inputs)
            if to_real != 1.0 and len(params) > 3:
                b = params[3].node.constant_value()
                if b is None:
                    continue
                bias = (np.asarray(b, np.float64) * to_real).astype(np.float32)
                params[3] = Node.create(Constant, [], {"value": bias}, name=f"{conv.name}/int8/bias_real").output(0)
            # the QDQ graph saturates the convolution's result on its own grid before the Add:
            # clamp it to that grid's range first (an outlier past it was 12 steps off without)
            lo, hi = INT8_RANGES[conv.output(0).element_type]
            attrs = {k2: getattr(a, k2) for k2 in type(a).model_fields} | {
                "src_scale": float(a.src_scale) * to_real,  # type: ignore[attr-defined]
                "sum_clamp": [s * (lo - zp), s * (hi - zp)],
                "sum_input": len(conv.inputs), "sum_scale": float(dq_other.attrs.scale),  # type: ignore[attr-defined]
                "sum_zero_point": int(dq_other.attrs.zero_point), "post_ops": post,  # type: ignore[attr-defined]
                "dst_scale": float(quant.attrs.scale), "dst_zero_point": int(quant.attrs.zero_point),  # type: ignore[attr-defined]
            }
            new = Node.create(QuantizedConvolution, [*params, q_a], attrs, name=quant.name)
            names = list(conv.rt_info.get("fused_names") or [conv.name])
            for n in (dq_conv, dq_other, tail, *reversed(fused)):
                names += list(n.rt_info.get("fused_names") or [n.name])
            new.rt_info["fused_names"] = names
            model.replace_output(quant.output(0), new.output(0))
            return True
        return False
