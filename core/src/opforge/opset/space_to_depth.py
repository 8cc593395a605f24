"""SpaceToDepth-1: moves spatial blocks into channels: [N, C, D1, ..., DK] ->
[N, C * bs^K, D1 / bs, ..., DK / bs]; the inverse of DepthToSpace in the same ``mode``."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import lower_enum, same_type
from opforge.shape import Dim, PartialShape


class SpaceToDepthAttrs(OpAttrs):
    block_size: int = 1
    mode: Literal["blocks_first", "depth_first"]

    _enums = field_validator("mode", mode="before")(lower_enum)


class SpaceToDepth(Op):
    type_name = "SpaceToDepth"
    version = "opset1"
    Attrs = SpaceToDepthAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: SpaceToDepthAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_type(ctx, [(0, "data")], "any")
        if a.block_size <= 0:
            raise ctx.error(f"block_size is {a.block_size}, expected a positive integer")
        ds = ctx.input_shape(0)
        if ds.rank is None:
            return [TensorSpec(t, ds)]
        if ds.rank < 3:
            raise ctx.error(f"input 0 (data) has rank {ds.rank}, expected 3 or more ([N, C, spatial...])")
        n = ds.rank - 2
        spatial: list[Dim] = []
        for i, d in enumerate(ds.dims[2:]):
            if d is not None and d % a.block_size:
                raise ctx.error(
                    f"input 0 (data) dimension {i + 2} is {d}, not divisible by block_size {a.block_size}"
                )
            spatial.append(None if d is None else d // a.block_size)
        c = ds[1]
        return [TensorSpec(t, PartialShape([ds[0], None if c is None else c * a.block_size**n, *spatial]))]

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
