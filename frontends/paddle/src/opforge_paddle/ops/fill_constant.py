"""fill_constant (-> Out): a tensor of ``shape`` filled with ``value`` (or ``str_value``)."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import dtype_attr, int_list, translator
from opforge_paddle.pir_signatures import PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    t = dtype_attr(ctx, "dtype")
    shape = int_list(ctx, "shape", ("ShapeTensor", "ShapeTensorList"), [])
    text = str(ctx.get_attribute("str_value", "") or "")
    value = float(text) if text else ctx.get_attribute("value", 0.0)
    if ctx.has_input("ValueTensor"):
        raise ctx.error("a run-time fill value (input 'ValueTensor') is not supported")
    return {"Out": ctx.const(np.full(shape, value, dtype=t.np), t)}


EXTENSION = translator("fill_constant", convert)

PIR = PirOp("full", "fill_constant", ())
