"""Which squeeze-and-excitation readers take a bf16 block tensor as it is (emit.py ``_bf16_passes``).

A squeeze-and-excitation block (MobileNetV3, EfficientNet, RegNetY, MnasNet) reads its block
tensor, a depthwise convolution's output, twice: a global average pool (ReduceMean over the
spatial axes) and the channel scale ``x * s`` (Multiply by an [N, C, 1, 1] tensor) whose result
the projection convolution reads. Under the bf16 hint both read the convolution's bf16 output in
its layout, as OpenVINO's bf16 graph does, so the convolution writes bf16 (half the bytes) instead
of f32 and the scale hands bf16 to the projection without a conversion:

* the ReduceMean sums the exact f32 values of the bf16 elements (core/reduce_common.hpp) and
  writes f32, so the excitation's small convolutions see what they saw before, but for the
  block tensor's own bf16 rounding;
* the Multiply computes in f32 (oneDNN binary) and writes bf16 where every reader of its result
  takes bf16 (attribute ``bf16_output``), else f32 (core/binary_blocked.cpp).

``OPFORGE_CPU_BF16_SE=0`` turns this off (both read f32, as before), for measuring it.
"""

from __future__ import annotations

import os

from opforge.element_type import Type
from opforge.graph import Node, Output


def spatial_mean(r: Node, i: int, out: Output) -> bool:
    """ReduceMean ``r`` averages 4-D ``out`` (its input ``i``) over axes 2 and 3 (constant)."""
    if i != 0 or len(out.shape) != 4 or r.output_specs[0].type is not Type.f32:
        return False
    axes = r.inputs[1].node.constant_value()
    if axes is None:
        return False
    return sorted(int(a) % 4 for a in axes.reshape(-1)) == [2, 3]


def channel_scale(r: Node, i: int, out: Output) -> bool:
    """Multiply ``r`` scales 4-D ``out`` (its input ``i``), a block tensor of more than one
    position, by an f32 tensor that broadcasts over the spatial axes ([N, C, 1, 1], [C, 1, 1],
    a scalar...), its result of ``out``'s shape. (Not the excitation itself, [N, C, 1, 1]: a
    bf16 one would be converted to plain f32 for its scalar Multiply, slower.)"""
    if len(out.shape) != 4 or out.shape[2] * out.shape[3] < 2:
        return False
    if r.output_specs[0].type is not Type.f32 or len(r.inputs) != 2:
        return False
    if getattr(r.attrs, "auto_broadcast", "numpy") != "numpy":
        return False
    other = r.inputs[1 - i]
    if other == out or other.element_type is not Type.f32 or not other.spec.shape.is_static:
        return False
    if tuple(r.output(0).shape) != tuple(out.shape) or len(other.shape) > 4:
        return False
    s = (1,) * (4 - len(other.shape)) + tuple(int(d) for d in other.shape)
    return s[2] == 1 and s[3] == 1 and s[0] in (1, out.shape[0]) and s[1] in (1, out.shape[1])


def takes_bf16(r: Node, i: int, out: Output) -> bool:
    """Whether reader ``r`` of ``out`` (its input ``i``) is a squeeze-and-excitation reader that
    takes it in bf16: the global pool or the channel scale."""
    if not r.op.is_standard or os.environ.get("OPFORGE_CPU_BF16_SE", "1") == "0":
        return False
    if r.type_name == "ReduceMean":
        return spatial_mean(r, i, out)
    if r.type_name == "Multiply":
        return channel_scale(r, i, out)
    return False
