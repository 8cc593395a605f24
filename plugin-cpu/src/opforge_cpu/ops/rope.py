"""RoPE: the rotary position embedding of a decoder's queries or keys as one node (OpenVINO keeps
it an internal ``RoPE`` op too), with the head split before it folded in:

    x_h  = the [B, H, S, D] heads of input 0: input 0 itself (``input_layout='bhsd'``) or its
           [B, S, H, W] form before the head-split Transpose [0, 2, 1, 3] (``'bshd'``); either
           way the D = ``head_size`` columns from ``column_offset`` on of its last axis (W >= D:
           GPT-NeoX slices Q, K and V out of one [.., 3 D] projection)
    r    = x_h[..., :R]                          (R = ``rotary_dims``, even; R = D: Llama)
    y    = concat(r * cos + concat(-r[..., R/2:], r[..., :R/2]) * sin, x_h[..., R:])

``cos`` and ``sin`` (inputs 1, 2) are [Bc, 1, S, R] with Bc = 1 or B (constants, or computed from
position ids at run time). Made by ``opforge_cpu.passes.rope``; run by csrc/kernels/rope.cpp,
which reads each head's row where the projection wrote it and writes the rotated row once: no
transposed copy, no Slice/Neg/Concat/Multiply/Add steps."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape


class RoPEAttrs(OpAttrs):
    #: R: the leading columns of each head that rotate (rotate_half splits them at R / 2)
    rotary_dims: int
    #: D: the columns of each head (the output's last axis)
    head_size: int
    #: 'bhsd': input 0 is [B, H, S, W]; 'bshd': it is [B, S, H, W] (the Transpose folded in)
    input_layout: Literal["bhsd", "bshd"] = "bhsd"
    #: the first of the head's D columns in input 0's last axis (W)
    column_offset: int = 0


def heads(attrs: RoPEAttrs, x: np.ndarray) -> np.ndarray:
    """The [B, H, S, D] heads that ``attrs`` reads from input 0."""
    xh = x.transpose(0, 2, 1, 3) if attrs.input_layout == "bshd" else x
    return xh[..., attrs.column_offset:attrs.column_offset + attrs.head_size]


class RoPE(Op):
    type_name = "RoPE"
    version = "opforge_cpu"
    Attrs = RoPEAttrs
    cost_class = CostClass.ELEMENTWISE
    min_inputs = 3
    max_inputs = 3
    cpu_internal: ClassVar[bool] = True

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: RoPEAttrs = ctx.attrs  # type: ignore[assignment]
        shapes = [ctx.input_shape(i) for i in range(3)]
        if not all(s.is_static and len(s.to_tuple()) == 4 for s in shapes):
            raise ctx.error(f"inputs have shapes {[str(s) for s in shapes]}, expected static rank-4 x, cos, sin")
        x, cos, sin = (tuple(int(d) for d in s.to_tuple()) for s in shapes)
        if a.input_layout == "bshd":
            b, s, h, w = x
        else:
            b, h, s, w = x
        d, r = a.head_size, a.rotary_dims
        if d < 1 or a.column_offset < 0 or a.column_offset + d > w:
            raise ctx.error(f"columns [{a.column_offset}, {a.column_offset + d}) do not fit input 0's last axis "
                            f"of {w} (shape {x}, layout {a.input_layout})")
        if r < 2 or r % 2 or r > d:
            raise ctx.error(f"rotary_dims {r} is not an even count of 2 to head_size {d}")
        if cos != sin or cos[1:] != (1, s, r) or cos[0] not in (1, b):
            raise ctx.error(f"cos {cos} and sin {sin}: expected one shape [1 or {b}, 1, {s}, {r}]")
        types = [ctx.input_type(i) for i in range(3)]
        if any(t is not Type.f32 for t in types):
            raise ctx.error(f"inputs have types {[t.ir for t in types]}, expected f32")
        return [TensorSpec(Type.f32, PartialShape((b, h, s, d)))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: RoPEAttrs = attrs
        x, cos, sin = inputs
        xh = heads(a, x)
        r, half = a.rotary_dims, a.rotary_dims // 2
        rot = xh[..., :r]
        turned = np.concatenate([-rot[..., half:], rot[..., :half]], axis=-1)
        y = np.concatenate([rot * cos + turned * sin, xh[..., r:]], axis=-1)
        return [np.ascontiguousarray(y, dtype=x.dtype)]
