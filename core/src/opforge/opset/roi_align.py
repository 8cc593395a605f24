"""ROIAlign-9: pools each region of interest of a feature map [N, C, H, W] into a fixed
[pooled_h, pooled_w] grid by bilinear sampling, giving [num_rois, C, pooled_h, pooled_w].

``rois`` [num_rois, 4] are boxes (x1, y1, x2, y2) scaled by ``spatial_scale`` and shifted per
``aligned_mode``: ``asymmetric`` (x * scale; boxes smaller than 1x1 grow to 1x1),
``half_pixel_for_nn`` (x * scale - 0.5) or ``half_pixel`` ((x + 0.5) * scale - 0.5).
``batch_indices`` [num_rois] pick the image. Each bin averages (``mode="avg"``) or takes the
largest of (``"max"``, starting from 0 as OpenVINO does) ``sampling_ratio`` x ``sampling_ratio`` bilinear samples at the centres of
a regular sub-grid (0: ``ceil(bin size)`` samples per axis). Samples more than one pixel outside
the map are zero; samples within one pixel are clamped to the edge.

``mode="onnx_max"`` (opforge's own mode, not OpenVINO's; what ONNX's RoiAlign ``max`` means):
each sample is the largest of its four *weighted* bilinear corner terms, and a bin takes the
largest sample, starting from its first one (not from 0).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import cast_to, check_integral, check_rank, lower_enum, merge_dim, to_work
from opforge.shape import PartialShape


class ROIAlignAttrs(OpAttrs):
    pooled_h: int
    pooled_w: int
    sampling_ratio: int
    spatial_scale: float
    mode: Literal["avg", "max", "onnx_max"]
    aligned_mode: Literal["asymmetric", "half_pixel_for_nn", "half_pixel"] = "asymmetric"

    _enums = field_validator("mode", "aligned_mode", mode="before")(lower_enum)


def _bilinear(img: np.ndarray, y: np.ndarray, x: np.ndarray, corner_max: bool = False) -> np.ndarray:
    """img [C, H, W] sampled at points y, x (same shape S): [C, *S] (``corner_max``: the largest
    of the four weighted corner terms instead of their sum)."""
    _, h, w = img.shape
    outside = (y < -1.0) | (y > h) | (x < -1.0) | (x > w)
    y = np.clip(y, 0, None)
    x = np.clip(x, 0, None)
    y0 = np.floor(y).astype(np.int64)
    x0 = np.floor(x).astype(np.int64)
    at_end_y = y0 >= h - 1
    at_end_x = x0 >= w - 1
    y0 = np.where(at_end_y, h - 1, y0)
    x0 = np.where(at_end_x, w - 1, x0)
    y1 = np.where(at_end_y, h - 1, y0 + 1)
    x1 = np.where(at_end_x, w - 1, x0 + 1)
    y = np.where(at_end_y, y0, y)
    x = np.where(at_end_x, x0, x)
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    terms = (hy * hx * img[:, y0, x0], hy * lx * img[:, y0, x1], ly * hx * img[:, y1, x0], ly * lx * img[:, y1, x1])
    v = np.maximum(np.maximum(terms[0], terms[1]), np.maximum(terms[2], terms[3])) if corner_max else \
        terms[0] + terms[1] + terms[2] + terms[3]
    return np.where(outside, 0, v)


class ROIAlign(Op):
    type_name = "ROIAlign"
    version = "opset9"
    Attrs = ROIAlignAttrs
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ROIAlignAttrs = ctx.attrs  # type: ignore[assignment]
        if a.pooled_h <= 0 or a.pooled_w <= 0:
            raise ctx.error(f"pooled_h and pooled_w must be positive, got {a.pooled_h} and {a.pooled_w}")
        if a.sampling_ratio < 0:
            raise ctx.error(f"sampling_ratio is {a.sampling_ratio}, expected 0 or more")
        if a.spatial_scale <= 0:
            raise ctx.error(f"spatial_scale is {a.spatial_scale}, expected a positive value")
        t = ctx.input_type(0)
        for i in (0, 1):
            ti = ctx.input_type(i)
            if ti is not Type.dynamic and not ti.is_float:
                raise ctx.error(f"input {i} has element type {ti}, expected a floating-point type")
        check_integral(ctx, 2, "batch_indices")
        check_rank(ctx, 0, "data", [4])
        check_rank(ctx, 1, "rois", [2])
        check_rank(ctx, 2, "batch_indices", [1])
        d, r, bi = ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2)
        if r.rank is not None and r.dims[1] not in (None, 4):
            raise ctx.error(f"input 1 (rois) has shape {r}, its last dimension must be 4")
        n = merge_dim(ctx, r.dims[0] if r.rank else None, bi.dims[0] if bi.rank else None,
                      "number of rois and of batch indices")
        c = d.dims[1] if d.rank is not None else None
        return [TensorSpec(t, PartialShape([n, c, a.pooled_h, a.pooled_w]))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: ROIAlignAttrs = attrs
        data, rois, batch = inputs
        x = to_work(data)
        n_img, c, _, _ = data.shape
        out = np.zeros((rois.shape[0], c, a.pooled_h, a.pooled_w), dtype=x.dtype)
        # Box, bin and sample coordinates in the data's type, as OpenVINO, ONNX Runtime and ONNX's
        # reference compute them: in f64, a bin width of 3.0000001 would take 4 samples, not 3.
        work = x.dtype.type
        boxes = rois.astype(work)
        scale = work(a.spatial_scale)
        for k in range(rois.shape[0]):
            b = int(batch[k])
            if not 0 <= b < n_img:
                raise ValueError(f"batch index {b} of roi {k} is out of range [0, {n_img})")
            x1, y1, x2, y2 = boxes[k]
            if a.aligned_mode == "half_pixel":
                x1, y1, x2, y2 = ((v + work(0.5)) * scale - work(0.5) for v in (x1, y1, x2, y2))
            else:
                shift = work(-0.5 if a.aligned_mode == "half_pixel_for_nn" else 0.0)
                x1, y1, x2, y2 = (v * scale + shift for v in (x1, y1, x2, y2))
            rw, rh = x2 - x1, y2 - y1
            if a.aligned_mode == "asymmetric":
                rw, rh = max(rw, work(1.0)), max(rh, work(1.0))
            bw, bh = rw / work(a.pooled_w), rh / work(a.pooled_h)
            sx = a.sampling_ratio or max(math.ceil(bw), 1)
            sy = a.sampling_ratio or max(math.ceil(bh), 1)
            half = work(0.5)
            py = (np.arange(a.pooled_h, dtype=work)[:, None] * bh
                  + (np.arange(sy, dtype=work)[None, :] + half) * (bh / work(sy)) + y1)
            px = (np.arange(a.pooled_w, dtype=work)[:, None] * bw
                  + (np.arange(sx, dtype=work)[None, :] + half) * (bw / work(sx)) + x1)
            yy = np.broadcast_to(py[:, None, :, None], (a.pooled_h, a.pooled_w, sy, sx))
            xx = np.broadcast_to(px[None, :, None, :], (a.pooled_h, a.pooled_w, sy, sx))
            v = _bilinear(x[b], yy, xx, a.mode == "onnx_max")  # [C, ph, pw, sy, sx]
            if a.mode == "avg":
                out[k] = v.mean(axis=(3, 4))
            elif a.mode == "max":
                # OpenVINO's running maximum starts at 0, so a bin of negative samples pools to 0.
                out[k] = np.maximum(v.max(axis=(3, 4)), 0)
            else:
                out[k] = v.max(axis=(3, 4))
        return [cast_to(out, data.dtype)]
