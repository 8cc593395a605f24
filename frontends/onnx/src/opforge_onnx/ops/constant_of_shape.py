"""ConstantOfShape: Broadcast of the ``value`` scalar (f32 zero by default) to the shape."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import to_i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    value = np.asarray(ctx.get_attribute("value", np.zeros(1, np.float32))).reshape(-1)
    if value.size != 1:
        raise ctx.error(f"attribute 'value' must hold one element, it holds {value.size}")
    shape = to_i64(ctx, ctx.get_input(0))
    return [ctx.op("Broadcast", ctx.const(value.reshape(())), shape, mode="numpy")]


EXTENSION = translator("ConstantOfShape", convert)
