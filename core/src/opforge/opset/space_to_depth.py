"""SpaceToDepth-1: moves spatial blocks into channels: [N, C, D1, ..., DK] ->
[N, C * bs^K, D1 / bs, ..., DK / bs]; the inverse of DepthToSpace in the same ``mode``."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import CostClass, InferContext
from opforge.opset._space_depth import BlockAttrs, BlockRearrange
from opforge.shape import Dim, PartialShape


class SpaceToDepthAttrs(BlockAttrs):
    """The attributes of SpaceToDepth."""


class SpaceToDepth(BlockRearrange):
    type_name = "SpaceToDepth"
    cost_class = CostClass.MOVEMENT
    rearranges_input = True
    version = "opset1"
    Attrs = SpaceToDepthAttrs

    @classmethod
    def output_shape(cls, ctx: InferContext, data: PartialShape, n: int, block_size: int) -> PartialShape:
        spatial: list[Dim] = []
        for i, d in enumerate(data.dims[2:]):
            if d is not None and d % block_size:
                raise ctx.error(
                    f"input 0 (data) dimension {i + 2} is {d}, not divisible by block_size {block_size}"
                )
            spatial.append(None if d is None else d // block_size)
        c = data[1]
        return PartialShape([data[0], None if c is None else c * block_size**n, *spatial])

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: SpaceToDepthAttrs = attrs
        x = inputs[0]
        n, bs = x.ndim - 2, a.block_size
        batch, c = x.shape[:2]
        spatial = [d // bs for d in x.shape[2:]]
        # [N, C, D1, b1, ..., Dn, bn]
        y = x.reshape(batch, c, *[v for d in spatial for v in (d, bs)])
        blocks = [3 + 2 * k for k in range(n)]
        dims = [2 + 2 * k for k in range(n)]
        order = [0, *blocks, 1, *dims] if a.mode == "blocks_first" else [0, 1, *blocks, *dims]
        y = y.transpose(order).reshape(batch, c * bs**n, *spatial)
        return [y]
