"""int8 execution of quantized models: the CPU graph pass that turns the f32 decomposition of a
quantized convolution or MatMul back into one int8 node.

The ONNX frontend decomposes QuantizeLinear/DequantizeLinear (QDQ models, as ONNX Runtime's
static quantizer writes them) and QLinearConv/QLinearMatMul into element-wise chains, so that
every device can run them in f32. Here the CPU recognises, around each Convolution,
GroupConvolution and MatMul with constant weights::

    QDQ:     (Convert(q_x) - z_x) * s_x  ->  op(., W)  [+ bias] [Relu/Clamp]  [-> quantize -> q_y]
    QLinear: Convert(q_x, i32) - z_x    ->  op(., W_i32) [+ bias_i32] -> requantize(M) -> q_y

and replaces the whole region by one QuantizedConvolution/QuantizedMatMul (``opforge_cpu.ops``)
reading the u8/i8 tensor ``q_x`` and writing ``q_y`` (or the f32 value when no quantize
follows), which the C++ kernels run as one oneDNN int8 primitive.

What lies between those nodes stays on the integers too where the QDQ graph allows it: a
QuantizeLinear of an f32 op whose inputs are all DequantizeLinear becomes one node on the u8/i8
tensors (concatenations, element-wise chains as 256-entry tables, Add/Multiply, average pools,
element moves, residual sums into the convolution before them, batch normalisations as a
per-channel scale and shift), computing the QDQ arithmetic.

Weights: the frontend folds DequantizeLinear of constant weights into f32 constants while
converting, so the int8 weights are recovered from them (``int8_weights``): a weight tensor is
used in int8 only when every output channel is *exactly* (to f32 rounding) an int8 vector times
one scale, i.e. when the int8 form loses nothing. Anything else stays f32 and runs as before.

The modules: ``qdq_patterns`` recognises the (de)quantize and requantize decompositions;
``weights`` recovers int8 weights; ``no_vnni`` keeps full-range weights in f32 where the kernels
would saturate; ``s8_shift`` (a planning pass of its own, after these) gives the convolutions
of s8 tensors u8 bytes + 128 on hosts without VNNI; one module per rewrite (``quantized_op``, ``quantize_dequantize``,
``residual_sum``, ``max_pool``, ``avg_pool``, ``concat``, ``lookup``, ``eltwise``, ``movement``,
``interpolate``, ``scale_shift``),
applied in the order ``Int8Fusion`` lists them. ``dynamic`` handles ONNX Runtime's dynamic
quantization (DynamicQuantizeLinear, MatMulInteger and ConvInteger, whose scales are known only
at run time).
"""

from __future__ import annotations

from typing import ClassVar

from opforge.graph import Model
from opforge.transformations import pattern as p

from opforge_cpu.passes.int8.avg_pool import AvgPoolFusion
from opforge_cpu.passes.int8.concat import ConcatFusion
from opforge_cpu.passes.int8.dynamic import (
    DynamicQuantizeFusion,
    IntegerConvolutionFusion,
    IntegerMatMulFusion,
)
from opforge_cpu.passes.int8.eltwise import EltwiseFusion
from opforge_cpu.passes.int8.interpolate import InterpolateFusion
from opforge_cpu.passes.int8.lookup import LookupFusion
from opforge_cpu.passes.int8.max_pool import MaxPoolFusion
from opforge_cpu.passes.int8.movement import MovementFusion
from opforge_cpu.passes.int8.quantize_dequantize import DequantizeFusion, QuantizeFusion
from opforge_cpu.passes.int8.quantized_op import QuantizedOpFusion
from opforge_cpu.passes.int8.residual_sum import ResidualSumFusion
from opforge_cpu.passes.int8.scale_shift import ScaleShiftFusion
from opforge_cpu.passes.int8.weights import int8_weights

__all__ = ["Int8Fusion", "fuse_int8", "int8_weights"]


class Int8Fusion(p.GraphRewrite):
    """The CPU's int8 pass: quantized convolutions and MatMuls first (they absorb the quantize
    and dequantize chains around them), then the chains left over become Quantize/Dequantize,
    then residual Adds between them go into the convolution before them, and max and average
    poolings, concatenations, element moves (Reshape, Transpose, Split...), element-wise chains
    of one tensor (tables), Add/Multiply of two, image resizes and batch normalisations between
    them run on the integers."""

    name: ClassVar[str] = "cpu_int8_fusion"

    def __init__(self) -> None:
        super().__init__(QuantizedOpFusion(), QuantizeFusion(), DequantizeFusion(), ResidualSumFusion(),
                         MaxPoolFusion(), ConcatFusion(), LookupFusion(), EltwiseFusion(), AvgPoolFusion(),
                         MovementFusion(), InterpolateFusion(), ScaleShiftFusion(), DynamicQuantizeFusion(),
                         IntegerMatMulFusion(), IntegerConvolutionFusion())


def fuse_int8(model: Model) -> bool:
    """Apply the int8 fusion to a static-shape model; whether anything changed."""
    return Int8Fusion().apply(model)
