"""Identity (and the torch exporter's weight sharing through it): the input itself."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    return [ctx.get_input(0)]


EXTENSION = translator("Identity", convert)
