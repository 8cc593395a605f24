"""Interpolate of a dequantized image, quantized -> QuantizedInterpolate (the resampling on the bytes)."""

from __future__ import annotations

from typing import ClassVar

from opforge.graph import Model, Node
from opforge.transformations import pattern as p

from opforge_cpu.ops.dequantize import Dequantize
from opforge_cpu.ops.quantize import Quantize
from opforge_cpu.ops.quantized_interpolate import QuantizedInterpolate
from opforge_cpu.passes.int8.qdq_patterns import fused_names, is_op, is_standard, single_user


class InterpolateFusion(p.MatcherPass):
    """Quantize(Interpolate(Dequantize(q))) resizing H and W of an image -> QuantizedInterpolate(q):
    a UNet decoder's upsampling between quantized convolutions stays on the u8 tensors in their
    channels-last layout (no Dequantize, f32 resample and Quantize, 3 passes over the largest
    tensors of the network). Taken only where the CPU kernel accepts the node (its check: the
    modes and resized axes the int8 kernel has), else the f32 path stays."""

    name: ClassVar[str] = "cpu_int8_interpolate"

    def pattern(self) -> p.PatternNode:
        # (Interpolate has two or three inputs: it is checked in the callback)
        return p.op(Quantize, predicate=lambda out: out.partial_shape.is_static)

    def callback(self, match: p.Match, model: Model) -> bool:
        quant = match.root.node
        interp = quant.inputs[0].node
        if (not is_standard(interp, "Interpolate") or interp.version != "opset11" or not is_op(interp.inputs[0].node, Dequantize)
                or single_user(model.consumers(), interp.output(0)) is not quant
                or any(i.node.constant_value() is None for i in interp.inputs[1:])):
            return False
        deq = interp.inputs[0].node
        q = quant.attrs
        attrs = interp.attrs.model_dump() | {
            "src_scale": float(deq.attrs.scale), "src_zero_point": int(deq.attrs.zero_point),  # type: ignore[attr-defined]
            "dst_scale": float(q.scale), "dst_zero_point": int(q.zero_point),  # type: ignore[attr-defined]
            "output_type": q.output_type}  # type: ignore[attr-defined]
        new = Node.create(QuantizedInterpolate, [deq.inputs[0], *interp.inputs[1:]], attrs, name=quant.name)
        if kernel_refuses(new):
            return False
        new.rt_info["fused_names"] = fused_names(deq, interp, quant)
        model.replace_output(quant.output(0), new.output(0))
        return True


def kernel_refuses(node: Node) -> str:
    """Why the CPU's C++ kernel of ``node`` (one of the CPU's own ops) would refuse it ("" when it
    takes it): a rewrite whose node the kernel cannot run would fail the compilation."""
    from opforge_cpu._loader import load_core
    from opforge_cpu.support import node_reason

    return node_reason(load_core(), node)
