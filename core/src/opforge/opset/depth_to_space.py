"""DepthToSpace-1: moves blocks of channels into spatial blocks: [N, C * bs^K, D1, ..., DK] ->
[N, C, D1 * bs, ..., DK * bs]. ``blocks_first`` reads the channel axis as [bs, ..., bs, C],
``depth_first`` as [C, bs, ..., bs]."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import lower_enum, same_type
from opforge.shape import Dim, PartialShape


class DepthToSpaceAttrs(OpAttrs):
    block_size: int = 1
    mode: Literal["blocks_first", "depth_first"]

    _enums = field_validator("mode", mode="before")(lower_enum)


class DepthToSpace(Op):
    type_name = "DepthToSpace"
    version = "opset1"
    Attrs = DepthToSpaceAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: DepthToSpaceAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_type(ctx, [(0, "data")], "any")
        if a.block_size <= 0:
            raise ctx.error(f"block_size is {a.block_size}, expected a positive integer")
        ds = ctx.input_shape(0)
        if ds.rank is None:
            return [TensorSpec(t, ds)]
        if ds.rank < 3:
            raise ctx.error(f"input 0 (data) has rank {ds.rank}, expected 3 or more ([N, C, spatial...])")
        n = ds.rank - 2
        step = a.block_size**n
        c = ds[1]
        if c is not None and c % step:
            raise ctx.error(f"input 0 (data) has {c} channels, not divisible by block_size^{n} = {step}")
        out: list[Dim] = [ds[0], None if c is None else c // step]
        out += [None if d is None else d * a.block_size for d in ds.dims[2:]]
        return [TensorSpec(t, PartialShape(out))]

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
