"""expand_v2 (X, Shape, expand_shapes_tensor -> Out): broadcast X to ``shape``; -1 keeps X's size."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, out, translator
from opforge_paddle.ops._shape_arg import int_vector
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    target = int_vector(ctx, "shape", "Shape", "expand_shapes_tensor")
    value = target.node.constant_value()
    if value is not None:
        # -1 keeps the input's size: 1 under bidirectional broadcasting does just that
        target = i64(ctx, np.where(np.asarray(value) < 0, 1, value))
    else:
        target = out(ctx.op("Maximum", target, i64(ctx, 1)))
    return {"Out": out(ctx.op("Broadcast", ctx.get_input("X"), target, mode="bidirectional"))}


EXTENSION = translator("expand_v2", convert)

PIR = PirOp("expand", "expand_v2", (Arg("X"), Arg("Shape", attr="shape")))
