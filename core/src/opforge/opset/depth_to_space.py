"""DepthToSpace-1: moves blocks of channels into spatial blocks: [N, C * bs^K, D1, ..., DK] ->
[N, C, D1 * bs, ..., DK * bs]. ``blocks_first`` reads the channel axis as [bs, ..., bs, C],
``depth_first`` as [C, bs, ..., bs]."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext
from opforge.opset._space_depth import BlockAttrs, BlockRearrange
from opforge.shape import Dim, PartialShape


class DepthToSpaceAttrs(BlockAttrs):
    """The attributes of DepthToSpace."""


class DepthToSpace(BlockRearrange):
    type_name = "DepthToSpace"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    version = "opset1"
    Attrs = DepthToSpaceAttrs

    @classmethod
    def output_shape(cls, ctx: InferContext, data: PartialShape, n: int, block_size: int) -> PartialShape:
        step = block_size**n
        c = data[1]
        if c is not None and c % step:
            raise ctx.error(f"input 0 (data) has {c} channels, not divisible by block_size^{n} = {step}")
        out: list[Dim] = [data[0], None if c is None else c // step]
        out += [None if d is None else d * block_size for d in data.dims[2:]]
        return PartialShape(out)

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: DepthToSpaceAttrs = attrs
        x = inputs[0]
        n, bs = x.ndim - 2, a.block_size
        batch, c, spatial = x.shape[0], x.shape[1] // bs**n, x.shape[2:]
        if a.mode == "blocks_first":
            y = x.reshape(batch, *([bs] * n), c, *spatial)
            # [N, b1..bn, C, D1..Dn] -> [N, C, D1, b1, ..., Dn, bn]
            order = [0, n + 1] + [i for k in range(n) for i in (n + 2 + k, 1 + k)]
        else:
            y = x.reshape(batch, c, *([bs] * n), *spatial)
            # [N, C, b1..bn, D1..Dn] -> [N, C, D1, b1, ..., Dn, bn]
            order = [0, 1] + [i for k in range(n) for i in (n + 2 + k, 2 + k)]
        y = y.transpose(order).reshape(batch, c, *(d * bs for d in spatial))
        return [y]
