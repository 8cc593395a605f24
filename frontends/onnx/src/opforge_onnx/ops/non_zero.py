"""NonZero: the same op, i64 indices shaped [rank, count]."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.op("NonZero", ctx.get_input(0), output_type=Type.i64)]


EXTENSION = translator("NonZero", convert)
