"""*_interp_v2 (X, OutSize, SizeTensor, Scale -> Out) -> Interpolate over the spatial axes.

The output size comes, in Paddle's priority order, from ``SizeTensor`` (scalars), ``OutSize``,
the ``Scale`` input or ``scale`` attribute, then ``out_d``/``out_h``/``out_w``. When a scale
decides the size, Paddle maps coordinates with 1/scale, which is Interpolate's ``scales`` mode.
Coordinates: ``align_corners`` -> align_corners; linear modes with ``align_mode`` 0 ->
half_pixel (clamped at 0, as linear_onnx does), 1 -> asymmetric; nearest -> asymmetric with
floor (round with align_corners); cubic -> half_pixel with coefficient -0.75.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_paddle.ops._helpers import check_nchw, const_input, etype, i64, out, rank
from opforge_paddle.pir_signatures import Arg, PirOp

_SIZE_ATTRS = {1: ["out_w"], 2: ["out_h", "out_w"], 3: ["out_d", "out_h", "out_w"]}


def _sizes(ctx: NodeContext) -> Output | None:
    if ctx.get_input_size("SizeTensor"):
        parts = [ctx.op("Reshape", ctx.get_input("SizeTensor", i), i64(ctx, [1]), special_zero=False)
                 for i in range(ctx.get_input_size("SizeTensor"))]
        parts = [p if etype(p) is Type.i64 else ctx.op("Convert", p, destination_type=Type.i64) for p in parts]
        return out(ctx.op("Concat", *parts, axis=0))
    if ctx.has_input("OutSize"):
        s = ctx.get_input("OutSize")
        return s if etype(s) is Type.i64 else out(ctx.op("Convert", s, destination_type=Type.i64))
    return None


def _scales(ctx: NodeContext, n: int) -> list[float] | None:
    if ctx.has_input("Scale"):
        value = const_input(ctx, "Scale")
        if value is None:
            raise ctx.error("input 'Scale' must be a constant while converting")
        scale = [float(v) for v in value]
    else:
        attr = ctx.get_attribute("scale", [])
        scale = [float(v) for v in (attr if isinstance(attr, (list, tuple)) else [attr])]
    if len(scale) == 1:
        scale = scale * n
    if len(scale) != n or any(s <= 0 for s in scale):
        return None
    return scale


def interp(mode: str) -> Callable[[NodeContext], ConversionResult]:
    def convert(ctx: NodeContext) -> ConversionResult:
        check_nchw(ctx, "data_layout")
        check_nchw(ctx, "data_format")
        x = ctx.get_input("X")
        n = rank(ctx, x, "input 'X'") - 2
        if n not in _SIZE_ATTRS:
            raise ctx.error(f"input 'X' has rank {n + 2}; interpolation takes 3-D to 5-D inputs")
        axes = i64(ctx, list(range(2, n + 2)))
        align_corners = bool(ctx.get_attribute("align_corners", False))
        align_mode = int(ctx.get_attribute("align_mode", 0))
        if mode == "nearest":
            target, coord = "nearest", "align_corners" if align_corners else "asymmetric"
            nearest = "round_prefer_ceil" if align_corners else "floor"
        elif mode == "cubic":
            target, coord, nearest = "cubic", "align_corners" if align_corners else "half_pixel", "floor"
        else:
            target = "linear_onnx"
            coord = "align_corners" if align_corners else ("half_pixel" if align_mode == 0 else "asymmetric")
            nearest = "floor"
        attrs: dict[str, Any] = {"mode": target, "coordinate_transformation_mode": coord, "nearest_mode": nearest,
                 "cube_coeff": -0.75}
        sizes = _sizes(ctx)
        scales = None if sizes is not None else _scales(ctx, n)
        if scales is not None:
            r = ctx.op("Interpolate", x, ctx.const(np.asarray(scales, np.float32)), axes,
                       shape_calculation_mode="scales", **attrs)
            return {"Out": out(r)}
        if sizes is None:
            dims = [int(ctx.get_attribute(a, -1)) for a in _SIZE_ATTRS[n]]
            if any(d <= 0 for d in dims):
                raise ctx.error(f"has no output size: no SizeTensor, OutSize or scale, and {_SIZE_ATTRS[n]} = {dims}")
            sizes = i64(ctx, dims)
        return {"Out": out(ctx.op("Interpolate", x, sizes, axes, shape_calculation_mode="sizes", **attrs))}
    convert.__name__ = convert.__qualname__ = f"convert_{mode}_interp"
    return convert


def pir_interp(pir: str, legacy: str) -> PirOp:
    return PirOp(pir, legacy, (Arg("X"), Arg("OutSize"), Arg("SizeTensor"), Arg("Scale")), ("Out",),
                 {"data_format": "data_layout"})
