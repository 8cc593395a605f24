"""ScatterND: ScatterNDUpdate-15, whose reductions cover ONNX's (add, mul, min, max)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator

_REDUCTIONS = {"none": "none", "add": "sum", "mul": "prod", "min": "min", "max": "max"}


def convert(ctx: NodeContext) -> ConversionResult:
    reduction = str(ctx.get_attribute("reduction", "none"))
    if reduction not in _REDUCTIONS:
        raise ctx.error(f"reduction '{reduction}' is not supported ({', '.join(_REDUCTIONS)})")
    return [ctx.op("ScatterNDUpdate", ctx.get_input(0), ctx.get_input(1), ctx.get_input(2),
                   version="opset15", reduction=_REDUCTIONS[reduction])]


EXTENSION = translator("ScatterND", convert)
