"""ShuffleChannels: ShuffleNet's channel shuffle as one node, its Concat and its split included:
Concat(x_1, ..., x_n) along the channels -> Reshape [N, g, C/g, H, W] -> Transpose [0, 2, 1, 3, 4]
-> Reshape [N, C, H, W] -> (optionally) Split/VariadicSplit/Slice of the channels into parts.

Output channel ``k`` of the shuffled tensor is channel ``(k % g) * (C / g) + k // g`` of the
concatenation; output ``p`` holds the shuffled channels ``[sum(splits[:p]), sum(splits[:p+1]))``.
Made by ``opforge_cpu.passes.shuffle_channels``; run by csrc/kernels/shuffle_channels.cpp, which
reads the branches where the convolutions wrote them (nchw or nhwc, f32 or bf16) and writes the
parts directly: no concatenated tensor, no transposed copy, no split copies."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.op import InferContext, OpAttrs, TensorSpec
from opforge.shape import PartialShape

from opforge_cpu.ops._cpu_op import ConcatenatingOp


class ShuffleChannelsAttrs(OpAttrs):
    group: int
    #: channels of each output, in order (one entry: the whole shuffled tensor)
    splits: list[int]


class ShuffleChannels(ConcatenatingOp):
    type_name = "ShuffleChannels"
    Attrs = ShuffleChannelsAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ShuffleChannelsAttrs = ctx.attrs  # type: ignore[assignment]
        shapes = [ctx.input_shape(i) for i in range(ctx.num_inputs)]
        if not all(s.is_static and len(s.to_tuple()) == 4 for s in shapes):
            raise ctx.error(f"inputs have shapes {[str(s) for s in shapes]}, expected static [N, C, H, W]")
        dims = [tuple(int(d) for d in s.to_tuple()) for s in shapes]
        n, _, h, w = dims[0]
        if any((d[0], d[2], d[3]) != (n, h, w) for d in dims):
            raise ctx.error(f"inputs have shapes {dims}, expected one [N, *, H, W]")
        types = {ctx.input_type(i) for i in range(ctx.num_inputs)}
        if len(types) != 1:
            raise ctx.error(f"inputs have types {sorted(t.ir for t in types)}, expected one element type")
        c = sum(d[1] for d in dims)
        if a.group < 1 or c % a.group:
            raise ctx.error(f"group {a.group} does not divide the {c} channels")
        if not a.splits or any(s < 0 for s in a.splits) or sum(a.splits) != c:
            raise ctx.error(f"splits {a.splits} do not add up to the {c} channels")
        t = types.pop()
        return [TensorSpec(t, PartialShape((n, s, h, w))) for s in a.splits]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: ShuffleChannelsAttrs = attrs
        x = np.concatenate(inputs, axis=1)
        n, c, h, w = x.shape
        y = x.reshape(n, a.group, c // a.group, h, w).transpose(0, 2, 1, 3, 4).reshape(n, c, h, w)
        return list(np.split(y, np.cumsum(a.splits)[:-1], axis=1))
