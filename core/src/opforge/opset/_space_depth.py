"""Shared machinery of DepthToSpace and SpaceToDepth: the ``block_size`` and ``mode``
attributes, and the checks of the ``[N, C, D1, ..., DK]`` data both rearrange."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import lower_enum, same_type
from opforge.shape import PartialShape


class BlockAttrs(OpAttrs):
    block_size: int = 1
    mode: Literal["blocks_first", "depth_first"]

    _enums = field_validator("mode", mode="before")(lower_enum)


class BlockRearrange(Op):
    """Subclasses set ``type_name``, ``version``, ``Attrs`` (a :class:`BlockAttrs`) and implement
    ``output_shape`` and ``evaluate``."""

    Attrs = BlockAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: BlockAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_type(ctx, [(0, "data")], "any")
        if a.block_size <= 0:
            raise ctx.error(f"block_size is {a.block_size}, expected a positive integer")
        ds = ctx.input_shape(0)
        if ds.rank is None:
            return [TensorSpec(t, ds)]
        if ds.rank < 3:
            raise ctx.error(f"input 0 (data) has rank {ds.rank}, expected 3 or more ([N, C, spatial...])")
        return [TensorSpec(t, cls.output_shape(ctx, ds, ds.rank - 2, a.block_size))]

    @classmethod
    def output_shape(cls, ctx: InferContext, data: PartialShape, n: int, block_size: int) -> PartialShape:
        """The output shape for data of ``n`` (1 or more) spatial dimensions and a positive
        ``block_size``."""
        raise ctx.error(f"{cls.__name__} defines no output_shape()")  # each subclass overrides it
