"""MaxPool: MaxPool-8 (values and flattened indices, as ONNX's storage_order=0)."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import auto_pad, require_rank, spatial_attrs, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    n = require_rank(ctx, x) - 2
    attrs = spatial_attrs(ctx, n)
    kernel = list(ctx.get_attribute("kernel_shape"))
    if int(ctx.get_attribute("storage_order", 0)) != 0:
        raise ctx.error("storage_order=1 (column-major indices) is not supported")
    node = ctx.op("MaxPool", x, kernel=kernel, auto_pad=auto_pad(ctx),
                  rounding_type="ceil" if int(ctx.get_attribute("ceil_mode", 0)) else "floor",
                  index_element_type=Type.i64, axis=0, **attrs)
    return [node.output(0), node.output(1)]


EXTENSION = translator("MaxPool", convert)
