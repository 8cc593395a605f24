"""Resize (and the deprecated Upsample): Interpolate-11.

ONNX ``linear`` is Interpolate's ``linear_onnx`` (N-D linear with ONNX's coordinate rules).
Before opset 11 Resize/Upsample had only scales, asymmetric coordinates and floor for nearest.
keep_aspect_ratio_policy (opset 18) is resolved while converting, which needs static shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import const_value, etype, i64, out, require_rank, to_i64, translator

_MODES = {"nearest": "nearest", "linear": "linear_onnx", "bilinear": "linear_onnx", "cubic": "cubic"}


def _mode(ctx: NodeContext) -> str:
    mode = str(ctx.get_attribute("mode", "nearest"))
    if mode not in _MODES:
        raise ctx.error(f"mode '{mode}' is not supported (supported: {', '.join(_MODES)})")
    return _MODES[mode]


def _legacy(ctx: NodeContext, scales: Output) -> ConversionResult:
    x = ctx.get_input(0)
    if etype(scales) != Type.f32:
        scales = out(ctx.op("Convert", scales, destination_type=Type.f32))
    return [ctx.op("Interpolate", x, scales, mode=_mode(ctx), shape_calculation_mode="scales",
                   coordinate_transformation_mode="asymmetric", nearest_mode="floor")]


def convert_upsample(ctx: NodeContext) -> ConversionResult:
    if (ctx.get_opset_version() or 9) < 9:
        return _legacy(ctx, ctx.const(np.asarray(ctx.get_attribute("scales"), np.float32)))
    return _legacy(ctx, ctx.get_input(1))


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    if (ctx.get_opset_version() or 11) < 11:
        return _legacy(ctx, ctx.get_input(1))
    r = require_rank(ctx, x)
    ctm = str(ctx.get_attribute("coordinate_transformation_mode", "half_pixel"))
    if ctm == "tf_crop_and_resize":
        raise ctx.error("coordinate_transformation_mode 'tf_crop_and_resize' is not supported by Interpolate")
    if int(ctx.get_attribute("exclude_outside", 0)):
        raise ctx.error("exclude_outside=1 is not supported by Interpolate")
    attrs: dict[str, Any] = {
        "mode": _mode(ctx), "coordinate_transformation_mode": ctm,
        "nearest_mode": str(ctx.get_attribute("nearest_mode", "round_prefer_floor")),
        "cube_coeff": float(ctx.get_attribute("cubic_coeff_a", -0.75)),
        "antialias": bool(ctx.get_attribute("antialias", 0)),
        "pads_begin": [0] * r, "pads_end": [0] * r,
    }
    axes_attr = ctx.get_attribute("axes", None)
    axes = [a + r if a < 0 else a for a in axes_attr] if axes_attr is not None else list(range(r))
    if ctx.has_input(3):
        sizes = to_i64(ctx, ctx.get_input(3))
        policy = str(ctx.get_attribute("keep_aspect_ratio_policy", "stretch"))
        if policy != "stretch":
            sv, ps = const_value(sizes), out(x).partial_shape
            if sv is None or not ps.is_static:
                raise ctx.error(f"keep_aspect_ratio_policy '{policy}' needs constant sizes and a static input shape")
            dims = [ps.to_tuple()[a] for a in axes]
            ratios = [s / d for s, d in zip(sv.tolist(), dims)]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            sizes = i64(ctx, [int(np.floor(d * scale + 0.5)) for d in dims])
        return [ctx.op("Interpolate", x, sizes, i64(ctx, axes), shape_calculation_mode="sizes", **attrs)]
    if not ctx.has_input(2):
        raise ctx.error("needs either scales (input 2) or sizes (input 3)")
    scales = ctx.get_input(2)
    if etype(scales) != Type.f32:
        scales = out(ctx.op("Convert", scales, destination_type=Type.f32))
    return [ctx.op("Interpolate", x, scales, i64(ctx, axes), shape_calculation_mode="scales", **attrs)]


EXTENSIONS: list[ConversionExtension] = [translator("Resize", convert), translator("Upsample", convert_upsample)]
