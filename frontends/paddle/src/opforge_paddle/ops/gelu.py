"""gelu (X -> Out) -> Gelu, erf or tanh (``approximate``) form."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out, translator
from opforge_paddle.pir_signatures import unary


def convert(ctx: NodeContext) -> ConversionResult:
    mode = "TANH" if bool(ctx.get_attribute("approximate", False)) else "ERF"
    return {"Out": out(ctx.op("Gelu", ctx.get_input("X"), approximation_mode=mode))}


EXTENSION = translator("gelu", convert)

PIR = unary("gelu")
