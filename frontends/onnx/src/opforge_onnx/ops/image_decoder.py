"""ImageDecoder (opset 20): encoded image bytes to an [H, W, C] u8 image, decoded with Pillow."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    fmt = ctx.get_attribute("pixel_format", "RGB", dtype=str)
    if fmt not in ("RGB", "BGR", "Grayscale"):
        raise ctx.error(f"pixel_format '{fmt}' is not one of RGB, BGR, Grayscale")
    return [ctx.op("ImageDecoder", ctx.get_input(0), pixel_format=fmt)]


EXTENSION = translator("ImageDecoder", convert)
