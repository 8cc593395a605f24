"""assign_value (-> Out): a constant tensor stored in the op's attributes.

Paddle has stored the values as ``values`` (Scalars, 2.6+) and, before, per type as
``int32_values`` / ``int64_values`` / ``fp32_values`` / ``fp64_values`` / ``bool_values``."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import dtype_attr, translator
from opforge_paddle.pir_signatures import Arg, PirOp

_VALUE_ATTRS = ("values", "int32_values", "int64_values", "fp32_values", "fp64_values", "bool_values")


def convert(ctx: NodeContext) -> ConversionResult:
    t = dtype_attr(ctx, "dtype")
    shape = [int(d) for d in ctx.get_attribute("shape", [])]
    values = None
    for name in _VALUE_ATTRS:
        v = ctx.get_attribute(name, None)
        if v:
            values = v
            break
    data = np.asarray(values if values is not None else [], dtype=t.np)
    if data.size != int(np.prod(shape)):
        raise ctx.error(f"holds {data.size} values for shape {shape}")
    return {"Out": ctx.const(data.reshape(shape), t)}


EXTENSION = translator("assign_value", convert)

PIR = [
    PirOp("full_int_array", "assign_value", ()),
    # PIR's assign_value_ writes into a buffer operand (a full); only the attributes matter
    PirOp("assign_value", "assign_value", (Arg("Buffer"),)),
]
