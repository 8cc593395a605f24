"""Size: the element count, a scalar i64."""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, out, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    ps = out(x).partial_shape
    if ps.is_static:
        return [i64(ctx, int(np.prod(ps.to_tuple(), dtype=np.int64)))]
    s = ctx.op("ShapeOf", x, output_type=Type.i64)
    return [ctx.op("ReduceProd", s, i64(ctx, 0), keep_dims=False)]


EXTENSION = translator("Size", convert)
