"""Dropout at inference: the input itself, and an all-true mask when it is asked for."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import shape_of, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    if ctx.get_output_size() > 1 and ctx.output_names[1]:
        mask = ctx.op("Broadcast", ctx.const(np.bool_(True)), shape_of(ctx, x), mode="numpy")
        return [x, mask]
    return [x]


EXTENSION = translator("Dropout", convert)
