"""ScatterElements: ScatterElementsUpdate-12 with its reduction."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, translator

_REDUCTIONS = {"none": "none", "add": "sum", "mul": "prod", "min": "min", "max": "max"}


def convert(ctx: NodeContext) -> ConversionResult:
    reduction = str(ctx.get_attribute("reduction", "none"))
    if reduction not in _REDUCTIONS:
        raise ctx.error(f"reduction '{reduction}' is not supported ({', '.join(_REDUCTIONS)})")
    axis = i64(ctx, int(ctx.get_attribute("axis", 0)))
    return [ctx.op("ScatterElementsUpdate", ctx.get_input(0), ctx.get_input(1), ctx.get_input(2), axis,
                   reduction=_REDUCTIONS[reduction], use_init_val=True)]


EXTENSION = translator("ScatterElements", convert)
