"""BitShift: BitwiseLeftShift-15 / BitwiseRightShift-15. Shift amounts outside [0, bit width)
saturate as ONNX defines (all bits shifted out), which is how the opforge ops define them."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    direction = str(ctx.get_attribute("direction"))
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.error(f"direction '{direction}' must be LEFT or RIGHT")
    target = "BitwiseLeftShift" if direction == "LEFT" else "BitwiseRightShift"
    return [ctx.op(target, ctx.get_input(0), ctx.get_input(1))]


EXTENSION = translator("BitShift", convert)
