"""Constant: a tensor in one of its attribute forms (paddle2onnx stores every weight this way)."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    forms = {
        "value": lambda v: np.asarray(v),
        "sparse_value": lambda v: np.asarray(v),
        "value_float": lambda v: np.asarray(v, dtype=np.float32),
        "value_floats": lambda v: np.asarray(v, dtype=np.float32).reshape(-1),
        "value_int": lambda v: np.asarray(v, dtype=np.int64),
        "value_ints": lambda v: np.asarray(v, dtype=np.int64).reshape(-1),
    }
    for name, make in forms.items():
        if ctx.has_attribute(name):
            return [ctx.const(make(ctx.get_attribute(name)))]
    if ctx.has_attribute("value_string") or ctx.has_attribute("value_strings"):
        raise ctx.error("string constants are not supported: opforge has no string element type")
    raise ctx.error("has none of the attributes value, value_float(s), value_int(s), sparse_value")


EXTENSION = translator("Constant", convert)
