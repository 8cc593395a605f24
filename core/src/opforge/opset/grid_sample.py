"""GridSample-9: samples ``data`` [N, C, H, W] at the normalised locations of ``grid``
[N, H_out, W_out, 2] (x then y, in [-1, 1]), giving [N, C, H_out, W_out].

``align_corners``: -1 and 1 are the centres of the corner pixels (else their outer edges).
``mode``: ``bilinear``, ``bicubic`` (Keys, a = -0.75) or ``nearest`` (halves round to even).
``padding_mode``: what lies outside the image: ``zeros``, ``border`` (coordinates clamped to the
edge) or ``reflection`` (coordinates mirrored at the border). These are the rules of ONNX's
GridSample, which OpenVINO's op reproduces, with one difference: ``bicubic`` with ``border``
clamps each of the 4x4 taps to the image rather than the sampling coordinate (as OpenVINO's CPU
device and PyTorch do; ONNX's reference clamps the coordinate first).

Beyond OpenVINO (whose GridSample-9 is 2-D only), opforge also samples volumes as ONNX's
GridSample-20 does: ``data`` [N, C, D, H, W] at ``grid`` [N, D_out, H_out, W_out, 3] (x, y, z),
with ``bilinear`` meaning trilinear and ``nearest``; ``bicubic`` stays 2-D (as in ONNX).
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import cast_to, check_rank, lower_enum, merge_dim, to_work
from opforge.shape import PartialShape


class GridSampleAttrs(OpAttrs):
    align_corners: bool = False
    mode: Literal["bilinear", "bicubic", "nearest"] = "bilinear"
    padding_mode: Literal["zeros", "border", "reflection"] = "zeros"

    _enums = field_validator("mode", "padding_mode", mode="before")(lower_enum)


def _reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Mirror coordinates at ``lo`` and ``hi`` until they lie between them."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    out = x.copy()
    below, above = x < lo, x > hi
    for mask, dist, near, far in ((below, lo - x, lo, hi), (above, x - hi, hi, lo)):
        n = np.floor(dist / span)
        r = dist - n * span
        even = (n % 2) == 0
        sign = 1.0 if near == lo else -1.0
        out = np.where(mask & even, near + sign * r, out)
        out = np.where(mask & ~even, far - sign * r, out)
    return out


def _cubic_coeffs(t: np.ndarray) -> list[np.ndarray]:
    a = -0.75
    x = np.abs(t)
    return [
        ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a,
        ((a + 2) * x - (a + 3)) * x * x + 1,
        ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1,
        ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a,
    ]


class GridSample(Op):
    type_name = "GridSample"
    version = "opset9"
    Attrs = GridSampleAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t, tg = ctx.input_type(0), ctx.input_type(1)
        if tg is not Type.dynamic and not tg.is_float:
            raise ctx.error(f"input 1 (grid) has element type {tg}, expected a floating-point type")
        check_rank(ctx, 0, "data", [4, 5])
        check_rank(ctx, 1, "grid", [4, 5])
        d, g = ctx.input_shape(0), ctx.input_shape(1)
        if d.rank is not None and g.rank is not None and d.rank != g.rank:
            raise ctx.error(f"data of rank {d.rank} needs a grid of the same rank, got rank {g.rank}")
        rank = d.rank if d.rank is not None else g.rank
        if rank is None:
            return [TensorSpec(t, PartialShape.dynamic())]
        if rank == 5 and ctx.attrs.mode == "bicubic":  # type: ignore[attr-defined]
            raise ctx.error("bicubic sampling is 2-D only (volumetric data takes bilinear or nearest)")
        n = c = None
        spatial: list[int | None] = [None] * (rank - 2)
        if d.rank is not None:
            n, c = d.dims[0], d.dims[1]
        if g.rank is not None:
            if g.dims[-1] not in (None, rank - 2):
                raise ctx.error(f"input 1 (grid) has shape {g}, its last dimension must be {rank - 2}")
            n = merge_dim(ctx, n, g.dims[0], "batch of data and grid")
            spatial = list(g.dims[1:-1])
        return [TensorSpec(t, PartialShape([n, c, *spatial]))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: GridSampleAttrs = attrs
        data, grid = inputs
        x_in = to_work(data)
        work = x_in.dtype if x_in.dtype.kind == "f" else np.dtype(np.float64)
        g = np.asarray(grid).astype(work)
        n, c = data.shape[:2]
        dims = tuple(data.shape[2:])
        sp = len(dims)
        # coordinates per output location: [N, (Do,) Ho, Wo] each, outermost spatial axis first
        # (the grid lists them innermost first: x, y, z)
        coords = []
        for k, size in enumerate(dims):
            v = g[..., sp - 1 - k]
            coords.append((v + 1) / 2 * (size - 1) if a.align_corners else ((v + 1) * size - 1) / 2)
        borders = [(0.0, s - 1.0) if a.align_corners else (-0.5, s - 0.5) for s in dims]
        if a.mode == "nearest":
            coords = [np.rint(v) for v in coords]
        for k, (lo, hi) in enumerate(borders):
            v = coords[k]
            if a.padding_mode == "border" and a.mode != "bicubic":
                coords[k] = np.where((v < lo) | (v > hi), np.clip(v, 0, dims[k] - 1), v)
            elif a.padding_mode == "reflection":
                coords[k] = _reflect(v, lo, hi)
        batch = np.arange(n).reshape((n,) + (1,) * sp)

        def pixel(*at: np.ndarray) -> np.ndarray:
            """data[n, :, at...] with the padding rule for indices outside: [N, C, *out]."""
            idx = list(at)
            inside = np.ones(at[0].shape, bool)
            for k, size in enumerate(dims):
                if a.padding_mode == "zeros":
                    inside &= (idx[k] >= 0) & (idx[k] < size)
                    idx[k] = np.clip(idx[k], 0, size - 1)
                elif a.padding_mode == "border":
                    idx[k] = np.clip(idx[k], 0, size - 1)
                else:
                    lo, hi = borders[k]
                    idx[k] = np.clip(np.trunc(_reflect(idx[k].astype(work), lo, hi)).astype(np.int64), 0, size - 1)
            where: tuple[Any, ...] = (batch, slice(None), *idx)
            vals = x_in[where]  # [N, *out, C]
            vals = np.where(inside[..., None], vals, 0)
            return np.moveaxis(vals, -1, 1)

        if a.mode == "nearest":
            y = pixel(*[v.astype(np.int64) for v in coords])
        else:
            base = [np.floor(v) for v in coords]
            frac = [v - b for v, b in zip(coords, base)]
            b0 = [b.astype(np.int64) for b in base]
            if a.mode == "bilinear":
                taps = [0, 1]
                wts = [[1 - f, f] for f in frac]
            else:
                taps = [-1, 0, 1, 2]
                wts = [_cubic_coeffs(f) for f in frac]
            y = np.zeros((n, c, *coords[0].shape[1:]), dtype=work)
            for pick in itertools.product(range(len(taps)), repeat=sp):
                wgt = wts[0][pick[0]]
                for k in range(1, sp):
                    wgt = wgt * wts[k][pick[k]]
                y = y + wgt[:, None] * pixel(*[b0[k] + taps[pick[k]] for k in range(sp)])
        return [cast_to(np.asarray(y), data.dtype)]
