"""Resize: Interpolate-11, or for linear/cubic cases Interpolate cannot express, one matrix
product per axis (see :mod:`opforge_onnx.ops._resize_matrix`).

ONNX ``linear`` is Interpolate's ``linear_onnx`` (N-D linear with ONNX's coordinate rules).
Before opset 11 Resize/Upsample had only scales, asymmetric coordinates and floor for nearest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import const_value, etype, i64, out, require_rank, shape_of, to_i64, translator
from opforge_onnx.ops._resize_matrix import resize_by_matrices

_MODES = {"nearest": "nearest", "linear": "linear_onnx", "bilinear": "linear_onnx", "cubic": "cubic"}


def interpolate_mode(ctx: NodeContext) -> str:
    mode = str(ctx.get_attribute("mode", "nearest"))
    if mode not in _MODES:
        raise ctx.error(f"mode '{mode}' is not supported (supported: {', '.join(_MODES)})")
    return _MODES[mode]


def legacy(ctx: NodeContext, scales: Output) -> ConversionResult:
    x = ctx.get_input(0)
    if etype(scales) != Type.f32:
        scales = out(ctx.op("Convert", scales, destination_type=Type.f32))
    return [ctx.op("Interpolate", x, scales, mode=interpolate_mode(ctx), shape_calculation_mode="scales",
                   coordinate_transformation_mode="asymmetric", nearest_mode="floor")]


def _axis_plan(ctx: NodeContext, x: Output, axes: list[int], policy: str) -> tuple[list[Output], list[Output]]:
    """Per resized axis: the scale (f32 scalar) and the output length (i64 scalar), as ONNX's
    reference derives them: from scales, out = floor(in * scale); from sizes, scale = out / in,
    or under keep_aspect_ratio_policy one scale (min or max of those) and out = round(in * scale)."""
    dims = shape_of(ctx, x)
    lengths = [out(ctx.op("Gather", dims, i64(ctx, a), i64(ctx, 0), batch_dims=0)) for a in axes]
    lengths_f = [out(ctx.op("Convert", n, destination_type=Type.f32)) for n in lengths]
    if ctx.has_input(3):
        sizes = to_i64(ctx, ctx.get_input(3))
        outs = [out(ctx.op("Gather", sizes, i64(ctx, k), i64(ctx, 0), batch_dims=0)) for k in range(len(axes))]
        scales = [out(ctx.op("Divide", ctx.op("Convert", o, destination_type=Type.f32), n, m_pythondiv=False))
                  for o, n in zip(outs, lengths_f)]
        if policy != "stretch":
            stacked = ctx.op("Concat", *[ctx.op("Unsqueeze", v, i64(ctx, [0])) for v in scales], axis=0)
            one = out(ctx.op("ReduceMin" if policy == "not_larger" else "ReduceMax", stacked, i64(ctx, [0]),
                             keep_dims=False))
            scales = [one] * len(axes)
            half = ctx.const(np.asarray(0.5, np.float32))
            outs = [out(ctx.op("Convert", ctx.op("Floor", ctx.op("Add", ctx.op("Multiply", n, one), half)),
                               destination_type=Type.i64)) for n in lengths_f]
        return scales, outs
    if not ctx.has_input(2):
        raise ctx.error("needs either scales (input 2) or sizes (input 3)")
    sc = ctx.get_input(2)
    if etype(sc) != Type.f32:
        sc = out(ctx.op("Convert", sc, destination_type=Type.f32))
    scales = [out(ctx.op("Gather", sc, i64(ctx, k), i64(ctx, 0), batch_dims=0)) for k in range(len(axes))]
    outs = [out(ctx.op("Convert", ctx.op("Floor", ctx.op("Multiply", s, n)), destination_type=Type.i64))
            for s, n in zip(scales, lengths_f)]
    return scales, outs


def _needs_matrices(ctx: NodeContext, mode: str, ctm: str, policy: str) -> bool:
    """Whether Interpolate cannot reproduce ONNX here (see :mod:`opforge_onnx.ops._resize_matrix`)."""
    if mode == "nearest":
        return False
    if int(ctx.get_attribute("antialias", 0)) or int(ctx.get_attribute("exclude_outside", 0)):
        return True
    if ctm in ("tf_crop_and_resize", "half_pixel_symmetric") or policy != "stretch":
        return True
    if ctm == "align_corners" and not ctx.has_input(3) and ctx.has_input(2):
        # Interpolate divides by (out - 1), ONNX by (in * scale - 1): equal only when in * scale
        # is a whole number, which is known only for constant scales and a static shape.
        sv, ps = const_value(ctx.get_input(2)), out(ctx.get_input(0)).partial_shape
        if sv is None or not ps.is_static:
            return True
        return any(float(v) * d != int(float(v) * d) for v, d in zip(np.asarray(sv).reshape(-1), ps.to_tuple()))
    return False


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    if (ctx.get_opset_version() or 11) < 11:
        return legacy(ctx, ctx.get_input(1))
    r = require_rank(ctx, x)
    ctm = str(ctx.get_attribute("coordinate_transformation_mode", "half_pixel"))
    mode = str(ctx.get_attribute("mode", "nearest"))
    policy = str(ctx.get_attribute("keep_aspect_ratio_policy", "stretch"))
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise ctx.error(f"keep_aspect_ratio_policy '{policy}' is not supported")
    axes_attr = ctx.get_attribute("axes", None)
    axes = [a + r if a < 0 else a for a in axes_attr] if axes_attr is not None else list(range(r))
    if _needs_matrices(ctx, mode, ctm, policy):
        scales, sizes = _axis_plan(ctx, out(x), axes, policy)
        rois: list[tuple[Output, Output] | None] = [None] * len(axes)
        if ctm == "tf_crop_and_resize":
            if not ctx.has_input(1):
                raise ctx.error("tf_crop_and_resize needs the roi input")
            roi = out(ctx.op("Convert", ctx.get_input(1), destination_type=Type.f32))
            n = len(axes) if axes_attr is not None else r
            rois = [(out(ctx.op("Gather", roi, i64(ctx, k), i64(ctx, 0), batch_dims=0)),
                     out(ctx.op("Gather", roi, i64(ctx, n + k), i64(ctx, 0), batch_dims=0))) for k in range(len(axes))]
        keep = [k for k in range(len(axes)) if rois[k] is not None or _not_identity(scales[k], sizes[k], out(x), axes[k])]
        return [resize_by_matrices(
            ctx, out(x), [axes[k] for k in keep], [scales[k] for k in keep], [sizes[k] for k in keep],
            [rois[k] for k in keep], mode="linear" if mode in ("linear", "bilinear") else "cubic", ctm=ctm,
            cubic_a=float(ctx.get_attribute("cubic_coeff_a", -0.75)),
            antialias=bool(int(ctx.get_attribute("antialias", 0))),
            exclude_outside=bool(int(ctx.get_attribute("exclude_outside", 0))),
            extrapolation=float(ctx.get_attribute("extrapolation_value", 0.0)))]
    if ctm in ("tf_crop_and_resize", "half_pixel_symmetric"):
        raise ctx.error(f"coordinate_transformation_mode '{ctm}' with mode '{mode}' is not supported")
    attrs: dict[str, Any] = {
        "mode": interpolate_mode(ctx), "coordinate_transformation_mode": ctm,
        "nearest_mode": str(ctx.get_attribute("nearest_mode", "round_prefer_floor")),
        "cube_coeff": float(ctx.get_attribute("cubic_coeff_a", -0.75)),
        "antialias": False,
        "pads_begin": [0] * r, "pads_end": [0] * r,
    }
    if ctx.has_input(3):
        sizes_port = to_i64(ctx, ctx.get_input(3))
        if policy != "stretch":
            # nearest: Interpolate on the policy's output sizes (its per-axis scales out / in then
            # equal ONNX's one scale up to the rounding of the sizes)
            _, outs = _axis_plan(ctx, out(x), axes, policy)
            sizes_port = out(ctx.op("Concat", *[ctx.op("Unsqueeze", o, i64(ctx, [0])) for o in outs], axis=0))
        return [ctx.op("Interpolate", x, sizes_port, i64(ctx, axes), shape_calculation_mode="sizes", **attrs)]
    if not ctx.has_input(2):
        raise ctx.error("needs either scales (input 2) or sizes (input 3)")
    scales_port = ctx.get_input(2)
    if etype(scales_port) != Type.f32:
        scales_port = out(ctx.op("Convert", scales_port, destination_type=Type.f32))
    return [ctx.op("Interpolate", x, scales_port, i64(ctx, axes), shape_calculation_mode="scales", **attrs)]


def _not_identity(scale: Output, size: Output, x: Output, axis: int) -> bool:
    """False only when the axis is known to stay as it is (scale 1, same length): then ONNX's
    reference leaves it untouched and so does the matrix path."""
    sv, nv = const_value(scale), const_value(size)
    d = x.partial_shape.dims[axis]
    return not (sv is not None and nv is not None and float(sv) == 1.0 and d is not None and int(nv) == d)


EXTENSION = translator("Resize", convert)
