"""DeformableConvolution-8: a 2-D convolution whose kernel taps are displaced per output position
by learned ``offsets`` (and, optionally, weighted by a ``mask``, "modulated" deformable
convolution v2).

Inputs: ``data`` [N, C_in, H, W], ``offsets`` [N, 2 * deformable_group * KH * KW, H_out, W_out]
(per group and tap, row-major over the kernel: the y then the x displacement), ``filters``
[C_out, C_in / group, KH, KW] and optional ``mask`` [N, deformable_group * KH * KW, H_out, W_out].
Input channels are split into ``deformable_group`` consecutive groups, each with its own offsets.

Tap (kh, kw) of output (oh, ow) samples the data bilinearly at
``(oh * stride_y - pad_y + kh * dilation_y + dy, ow * stride_x - pad_x + kw * dilation_x + dx)``.
With ``bilinear_interpolation_pad=true`` a point within one pixel outside the map interpolates
with zeros for the missing neighbours and one farther out samples 0; with ``false`` (OpenVINO's
default) only points inside [0, H) x [0, W) sample, the neighbours past the last row or column
being that row or column, and all others give 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import cast_to, check_rank, lower_enum, to_work
from opforge.opset._window import AutoPad, check_positive, resolve_pads, window_count
from opforge.shape import Dim, PartialShape


class DeformableConvolutionAttrs(OpAttrs):
    strides: list[int]
    pads_begin: list[int]
    pads_end: list[int]
    dilations: list[int]
    auto_pad: AutoPad = "explicit"
    group: int = 1
    deformable_group: int = 1
    bilinear_interpolation_pad: bool = False

    _auto_pad = field_validator("auto_pad", mode="before")(lower_enum)


def _sample(img: np.ndarray, y: np.ndarray, x: np.ndarray, pad: bool) -> np.ndarray:
    """img [C, H, W] sampled at points y, x (same shape S): [C, *S], as OpenVINO's reference does."""
    _, h, w = img.shape
    if pad:
        inside = (y > -1) & (y < h) & (x > -1) & (x < w)
        y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
        y1, x1 = y0 + 1, x0 + 1
    else:
        inside = (y >= 0) & (y < h) & (x >= 0) & (x < w)
        y0 = np.maximum(np.floor(y), 0).astype(np.int64)
        x0 = np.maximum(np.floor(x), 0).astype(np.int64)
        y1 = np.minimum(np.ceil(y), h - 1).astype(np.int64)
        x1 = np.minimum(np.ceil(x), w - 1).astype(np.int64)
    ly, lx = y - y0, x - x0
    total = np.zeros((img.shape[0], *y.shape), dtype=img.dtype)
    for yy, wy in ((y0, 1 - ly), (y1, ly)):
        for xx, wx in ((x0, 1 - lx), (x1, lx)):
            ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            vals = img[:, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]
            total += np.where(ok, wy * wx, 0) * vals
    return np.where(inside, total, 0)


class DeformableConvolution(Op):
    type_name = "DeformableConvolution"
    cost_class = CostClass.COMPUTE
    version = "opset8"
    Attrs = DeformableConvolutionAttrs
    min_inputs = 3
    max_inputs = 4

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: DeformableConvolutionAttrs = ctx.attrs  # type: ignore[assignment]
        for name in ("strides", "dilations") + (("pads_begin", "pads_end") if a.auto_pad == "explicit" else ()):
            if len(getattr(a, name)) != 2:
                raise ctx.error(f"{name} has {len(getattr(a, name))} values, expected 2 (a 2-D convolution)")
        check_positive(ctx, strides=a.strides, dilations=a.dilations)
        if a.group <= 0 or a.deformable_group <= 0:
            raise ctx.error(f"group ({a.group}) and deformable_group ({a.deformable_group}) must be positive")
        t = Type.dynamic
        for i in range(ctx.num_inputs):
            ti = ctx.input_type(i)
            if ti is Type.dynamic:
                continue
            if not ti.is_float:
                raise ctx.error(f"input {i} has element type {ti}, expected a floating-point type")
            if t is not Type.dynamic and ti != t:
                raise ctx.error(f"input {i} has element type {ti}, expected {t}")
            t = ti
        for i, name in enumerate(("data", "offsets", "filters", "mask")[: ctx.num_inputs]):
            check_rank(ctx, i, name, [4])
        ds, os_, fs = ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2)
        d: list[Dim] = list(ds.dims) if ds.rank is not None else [None] * 4
        f: list[Dim] = list(fs.dims) if fs.rank is not None else [None] * 4
        if d[1] is not None and f[1] is not None and d[1] != f[1] * a.group:
            raise ctx.error(f"data has {d[1]} channels, filters expect {a.group} groups x {f[1]}")
        if d[1] is not None and d[1] % a.deformable_group:
            raise ctx.error(f"data channels {d[1]} are not divisible by deformable_group {a.deformable_group}")
        if f[0] is not None and f[0] % a.group:
            raise ctx.error(f"filters' output channels {f[0]} are not divisible by group {a.group}")
        kh, kw = f[2], f[3]
        if kh is not None and kw is not None and os_.rank is not None and os_.dims[1] is not None:
            want = 2 * a.deformable_group * kh * kw
            if os_.dims[1] != want:
                raise ctx.error(f"offsets have {os_.dims[1]} channels, expected 2 * deformable_group * KH * KW = {want}")
        pb, pe = resolve_pads(d[2:], [kh, kw], a.strides, a.dilations, a.pads_begin, a.pads_end, a.auto_pad)
        spatial: list[Dim] = []
        for i in range(2):
            if a.auto_pad in ("same_upper", "same_lower"):
                size = d[2 + i]
                spatial.append(None if size is None else -(-size // a.strides[i]))
            else:
                spatial.append(window_count(ctx, i, d[2 + i], f[2 + i], a.strides[i], a.dilations[i], pb[i], pe[i]))
        return [TensorSpec(t, PartialShape([d[0], f[0], *spatial]))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: DeformableConvolutionAttrs = attrs
        data = inputs[0]
        x, off, w = to_work(data), to_work(inputs[1]), to_work(inputs[2])
        mask = to_work(inputs[3]) if len(inputs) > 3 else None
        n, c, h, wd = x.shape
        c_out, c_g, kh, kw = w.shape
        oh, ow = off.shape[2], off.shape[3]
        dg = a.deformable_group
        pb, _ = resolve_pads([h, wd], [kh, kw], a.strides, a.dilations, a.pads_begin, a.pads_end, a.auto_pad)
        base_y = (np.arange(oh) * a.strides[0] - int(pb[0] or 0))[:, None, None, None] \
            + (np.arange(kh) * a.dilations[0])[None, None, :, None]
        base_x = (np.arange(ow) * a.strides[1] - int(pb[1] or 0))[None, :, None, None] \
            + (np.arange(kw) * a.dilations[1])[None, None, None, :]
        off = off.reshape(n, dg, kh, kw, 2, oh, ow)
        per = c // dg
        cols = np.zeros((n, c, kh, kw, oh, ow), dtype=x.dtype)
        for b in range(n):
            for g in range(dg):
                # sampling points [OH, OW, KH, KW]
                yy = base_y + np.transpose(off[b, g, :, :, 0], (2, 3, 0, 1))
                xx = base_x + np.transpose(off[b, g, :, :, 1], (2, 3, 0, 1))
                v = _sample(x[b, g * per:(g + 1) * per], yy, xx, a.bilinear_interpolation_pad)  # [C/dg, OH, OW, KH, KW]
                v = np.transpose(v, (0, 3, 4, 1, 2))
                if mask is not None:
                    v = v * mask[b].reshape(dg, kh, kw, oh, ow)[g][None]
                cols[b, g * per:(g + 1) * per] = v
        out = np.zeros((n, c_out, oh, ow), dtype=x.dtype)
        og = c_out // a.group
        for gi in range(a.group):
            wg = w[gi * og:(gi + 1) * og].reshape(og, -1)  # [og, c_g * kh * kw]
            cg = cols[:, gi * c_g:(gi + 1) * c_g].reshape(n, c_g * kh * kw, oh * ow)
            out[:, gi * og:(gi + 1) * og] = np.einsum("ok,nkp->nop", wg, cg).reshape(n, og, oh, ow)
        return [cast_to(out, data.dtype)]
