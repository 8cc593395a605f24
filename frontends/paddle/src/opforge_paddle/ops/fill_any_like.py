"""fill_any_like (X -> Out): X's shape filled with ``value``, of ``dtype`` (X's when -1);
PIR's full_like, zeros_like and ones_like."""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import etype, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp
from opforge_paddle.program import DTYPE_NAMES, VARTYPE_TO_TYPE


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    d = ctx.get_attribute("dtype", -1)
    t = DTYPE_NAMES.get(d) if isinstance(d, str) else VARTYPE_TO_TYPE.get(int(d))
    if t is None:
        t = etype(x)
    if ctx.has_input("ValueTensor"):
        value = ctx.get_input("ValueTensor").node.constant_value()
        if value is None:
            raise ctx.error("the fill value (input 'ValueTensor') must be a constant while converting")
        v = np.asarray(value).reshape(-1)[0]
    else:
        v = ctx.get_attribute("value", 0.0)
    shape = ctx.op("ShapeOf", x, output_type=Type.i64)
    return {"Out": out(ctx.op("Broadcast", ctx.const(np.asarray(v).astype(t.np), t), shape, mode="numpy"))}


EXTENSION = translator("fill_any_like", convert)

PIR = PirOp("full_like", "fill_any_like", (Arg("X"), Arg("ValueTensor", attr="value", scalar=True)))
