"""Upsample (deprecated in opset 10): Interpolate-11 with scales, asymmetric coordinates and
floor rounding for nearest, as Resize before opset 11 (see :mod:`opforge_onnx.ops.resize`).
Scales are an attribute before opset 9 and an input after."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator
from opforge_onnx.ops.resize import legacy


def convert(ctx: NodeContext) -> ConversionResult:
    if (ctx.get_opset_version() or 9) < 9:
        return legacy(ctx, ctx.const(np.asarray(ctx.get_attribute("scales"), np.float32)))
    return legacy(ctx, ctx.get_input(1))


EXTENSION = translator("Upsample", convert)
