"""Interpolate-11: resize chosen axes of a tensor by target sizes or by scale factors.

Inputs are data, scales_or_sizes (integer sizes or float scales, per ``shape_calculation_mode``)
and optionally axes (default: every axis). The data is first zero-padded by ``pads_begin`` /
``pads_end``. Each mode is separable, so the reference resizes one axis at a time: ``nearest``
gathers, the others multiply by a per-axis weight matrix [out, in] built exactly as OpenVINO's
reference computes the weights (float32 coordinates, the same clamping and rounding rules).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import cast_to, check_integral, check_rank, const_ints, lower_enum, to_work
from opforge.opset._window import pad_spatial
from opforge.shape import Dim, PartialShape

Mode = Literal["nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow"]
CoordinateMode = Literal[
    "half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners"
]
NearestMode = Literal["round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple"]

# Added before flooring ``size * scale`` so that scales like 1/3 of 3 give 1, not 0.
_SCALE_EPSILON = np.float32(1e-5)


class InterpolateAttrs(OpAttrs):
    mode: Mode
    shape_calculation_mode: Literal["sizes", "scales"]
    coordinate_transformation_mode: CoordinateMode = "half_pixel"
    nearest_mode: NearestMode = "round_prefer_floor"
    antialias: bool = False
    pads_begin: list[int] = [0]
    pads_end: list[int] = [0]
    cube_coeff: float = -0.75

    _enums = field_validator(
        "mode", "shape_calculation_mode", "coordinate_transformation_mode", "nearest_mode", mode="before"
    )(lower_enum)


def _full_pads(pads: Sequence[int], rank: int) -> list[int]:
    return [*pads, *([0] * (rank - len(pads)))][:rank]


def scaled_size(size: int, scale: float) -> int:
    return math.floor(np.float32(size) * np.float32(scale) + _SCALE_EPSILON)


class Interpolate(Op):
    type_name = "Interpolate"
    value_inputs = (1, 2)
    version = "opset11"
    Attrs = InterpolateAttrs
    min_inputs = 2
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: InterpolateAttrs = ctx.attrs  # type: ignore[assignment]
        t = ctx.input_type(0)
        if t is Type.boolean:
            raise ctx.error("input 0 (data) has element type bool, expected a numeric type")
        st = ctx.input_type(1)
        if a.shape_calculation_mode == "sizes":
            check_integral(ctx, 1, "sizes")
        elif st is not Type.dynamic and not st.is_float:
            raise ctx.error(f"input 1 (scales) has element type {st}, expected a float type in 'scales' mode")
        check_rank(ctx, 1, "scales_or_sizes", [1])
        if ctx.num_inputs == 3:
            check_integral(ctx, 2, "axes")
            check_rank(ctx, 2, "axes", [1])
        if any(p < 0 for p in [*a.pads_begin, *a.pads_end]):
            raise ctx.error(f"pads_begin {a.pads_begin} and pads_end {a.pads_end} must not be negative")
        ds = ctx.input_shape(0)
        if ds.rank is None:
            return [TensorSpec(t, ds)]
        rank = ds.rank
        for name, pads in (("pads_begin", a.pads_begin), ("pads_end", a.pads_end)):
            if len(pads) > rank:
                raise ctx.error(f"attribute '{name}' has {len(pads)} values, more than the data rank {rank}")
        pb, pe = _full_pads(a.pads_begin, rank), _full_pads(a.pads_end, rank)
        padded: list[Dim] = [None if d is None else d + pb[i] + pe[i] for i, d in enumerate(ds.dims)]
        axes: list[int] | None
        if ctx.num_inputs == 3:
            axes = const_ints(ctx, 2)
            # Unlike most ops, OpenVINO's Interpolate takes no negative axes.
            if axes is not None and (any(not 0 <= ax < rank for ax in axes) or len(set(axes)) != len(axes)):
                raise ctx.error(f"input 2 (axes) is {axes}, expected distinct values in [0, {rank - 1}]")
        else:
            axes = list(range(rank))
        count = ctx.input_shape(1)[0] if ctx.input_shape(1).rank == 1 else None
        if axes is not None and count is not None and count != len(axes):
            what = "axes" if ctx.num_inputs == 3 else "the data rank (no axes input)"
            raise ctx.error(
                f"input 1 (scales_or_sizes) has {count} elements, expected {len(axes)} to match {what}"
            )
        if axes is None:
            # Any axis may be resized.
            return [TensorSpec(t, PartialShape.dynamic(rank))]
        v = ctx.input_value(1)
        out = list(padded)
        if v is None:
            for ax in axes:
                out[ax] = None
        else:
            values = np.asarray(v).reshape(-1)
            for i, ax in enumerate(axes):
                size: Dim
                if a.shape_calculation_mode == "sizes":
                    size = int(values[i])
                else:
                    p = padded[ax]
                    size = None if p is None else scaled_size(p, float(values[i]))
                if size is not None and size < 0:
                    raise ctx.error(
                        f"output dimension {ax} would be {size}; sizes and scales must not be negative"
                    )
                out[ax] = size
        return [TensorSpec(t, PartialShape(out))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: InterpolateAttrs = attrs
        x = inputs[0]
        rank = x.ndim
        axes = [int(v) for v in np.asarray(inputs[2]).reshape(-1)] if len(inputs) > 2 else list(range(rank))
        values = np.asarray(inputs[1]).reshape(-1)
        y = pad_spatial(to_work(x), rank, _full_pads(a.pads_begin, rank), _full_pads(a.pads_end, rank))
        sizes: list[int] = []
        scales: list[np.float32] = []
        for i, ax in enumerate(axes):
            if a.shape_calculation_mode == "sizes":
                sizes.append(int(values[i]))
                scales.append(np.float32(sizes[-1]) / np.float32(y.shape[ax]))
            else:
                scales.append(np.float32(values[i]))
                sizes.append(scaled_size(y.shape[ax], float(values[i])))
        if a.mode == "nearest":
            for ax, size, scale in zip(axes, sizes, scales):
                y = np.take(y, _nearest_index(a, y.shape[ax], size, scale), axis=ax)
        elif a.mode in ("bilinear_pillow", "bicubic_pillow"):
            integral = x.dtype.kind in "iu"
            # OpenVINO resizes the last axis first and rounds integer images after each pass.
            for ax, size in reversed(list(zip(axes, sizes))):
                if size == y.shape[ax]:
                    continue
                y = _pillow_resample(a, y, ax, size)
                if integral:
                    y = _round_half_away(y)
        else:
            downsample = any(s < 1 for s in scales)
            for ax, size, scale in zip(axes, sizes, scales):
                n_in = y.shape[ax]
                if a.mode == "linear_onnx":
                    w = _linear_onnx_weights(a, n_in, size, scale)
                elif a.mode == "cubic":
                    w = _cubic_weights(a, n_in, size, scale)
                else:
                    w = _triangle_weights(a, n_in, size, scale, a.antialias and downsample)
                y = _apply(y, ax, w)
            if a.mode == "linear" and x.dtype.kind in "iu":
                # OpenVINO rounds this mode's integer results; linear_onnx and cubic truncate.
                y = _round_half_away(y)
        return [cast_to(y, x.dtype)]


def _apply(y: np.ndarray, axis: int, w: np.ndarray) -> np.ndarray:
    """Resize ``axis`` of ``y`` with the weight matrix ``w`` [out, in], summing only each output's
    taps (its nonzero weights). A dense product would multiply every input of the row by its zero
    weight, and 0 * NaN is NaN: one NaN pixel would turn its whole row into NaN, where the device
    kernels (and any tap-by-tap implementation) keep it inside the outputs that read it."""
    w = w.astype(y.dtype)
    nonzero = w != 0
    taps = int(nonzero.sum(axis=1).max(initial=0))
    out_shape = [w.shape[0] if d == axis else n for d, n in enumerate(y.shape)]
    out = np.zeros(out_shape, dtype=y.dtype)
    # per output, the columns of its nonzero weights first (in input order), then zero-weight padding
    cols = np.argsort(~nonzero, axis=1, kind="stable")[:, :taps]
    weights = np.take_along_axis(w, cols, axis=1)
    bshape = [1] * y.ndim
    bshape[axis] = w.shape[0]
    with np.errstate(invalid="ignore"):  # 0 * inf of a padding tap, discarded by the where
        for t in range(taps):
            wt = weights[:, t].reshape(bshape)
            out += np.where(wt != 0, wt * np.take(y, cols[:, t], axis=axis), 0)
    return out


def _coordinate_fn(mode: str) -> Callable[[np.ndarray, np.float32, int, int], np.ndarray]:
    """x_resized -> x_original, in float32 like OpenVINO's reference."""
    half = np.float32(0.5)

    def half_pixel(x: np.ndarray, s: np.float32, out: int, inp: int) -> np.ndarray:
        return (x + half) / s - half

    def pytorch_half_pixel(x: np.ndarray, s: np.float32, out: int, inp: int) -> np.ndarray:
        return (x + half) / s - half if out > 1 else np.zeros_like(x)

    def asymmetric(x: np.ndarray, s: np.float32, out: int, inp: int) -> np.ndarray:
        return x / s

    def tf_half_pixel_for_nn(x: np.ndarray, s: np.float32, out: int, inp: int) -> np.ndarray:
        return (x + half) / s

    def align_corners(x: np.ndarray, s: np.float32, out: int, inp: int) -> np.ndarray:
        if out == 1:
            return np.zeros_like(x)
        return x * np.float32(inp - 1) / np.float32(out - 1)

    fns: dict[str, Callable[[np.ndarray, np.float32, int, int], np.ndarray]] = {
        "half_pixel": half_pixel,
        "pytorch_half_pixel": pytorch_half_pixel,
        "asymmetric": asymmetric,
        "tf_half_pixel_for_nn": tf_half_pixel_for_nn,
        "align_corners": align_corners,
    }
    return fns[mode]


def _original_coords(a: InterpolateAttrs, n_in: int, n_out: int, scale: np.float32) -> np.ndarray:
    x = np.arange(n_out, dtype=np.float32)
    return _coordinate_fn(a.coordinate_transformation_mode)(x, scale, n_out, n_in).astype(np.float32)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C's ``std::round``: halves go away from zero."""
    return np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))


def _nearest_index(a: InterpolateAttrs, n_in: int, n_out: int, scale: np.float32) -> np.ndarray:
    c = _original_coords(a, n_in, n_out, scale)
    mode = a.nearest_mode
    if mode == "round_prefer_floor":
        idx = np.where(c == np.trunc(c) + np.float32(0.5), np.floor(c), _round_half_away(c))
    elif mode == "round_prefer_ceil":
        idx = _round_half_away(c)
    elif mode == "floor":
        idx = np.floor(c)
    elif mode == "ceil":
        idx = np.ceil(c)
    else:  # simple: ceil when downsampling, truncation otherwise
        idx = np.ceil(c) if scale < 1 else np.trunc(c)
    return np.clip(idx.astype(np.int64), 0, n_in - 1)


def _linear_onnx_weights(a: InterpolateAttrs, n_in: int, n_out: int, scale: np.float32) -> np.ndarray:
    c = np.clip(_original_coords(a, n_in, n_out, scale), 0, np.float32(n_in - 1))
    i0 = np.minimum(c.astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    d0 = np.abs(c - i0.astype(np.float32))
    d1 = np.abs(c - i1.astype(np.float32))
    same = i0 == i1
    d0 = np.where(same, np.float32(0.5), d0)
    d1 = np.where(same, np.float32(0.5), d1)
    w = np.zeros((n_out, n_in), dtype=np.float64)
    rows = np.arange(n_out)
    np.add.at(w, (rows, i0), d1)
    np.add.at(w, (rows, i1), d0)
    return w


def _cubic_weights(a: InterpolateAttrs, n_in: int, n_out: int, scale: np.float32) -> np.ndarray:
    c = _original_coords(a, n_in, n_out, scale)
    base = np.floor(c)
    s = np.abs(c - base).astype(np.float64)
    k = a.cube_coeff
    coeffs = [
        ((k * (s + 1) - 5 * k) * (s + 1) + 8 * k) * (s + 1) - 4 * k,
        ((k + 2) * s - (k + 3)) * s * s + 1,
        ((k + 2) * (1 - s) - (k + 3)) * (1 - s) * (1 - s) + 1,
        ((k * (2 - s) - 5 * k) * (2 - s) + 8 * k) * (2 - s) - 4 * k,
    ]
    w = np.zeros((n_out, n_in), dtype=np.float64)
    rows = np.arange(n_out)
    for i, coeff in enumerate(coeffs):
        np.add.at(w, (rows, np.clip(base.astype(np.int64) + i - 1, 0, n_in - 1)), coeff)
    return w


def _triangle_weights(
    a: InterpolateAttrs, n_in: int, n_out: int, scale: np.float32, antialias: bool
) -> np.ndarray:
    """The ``linear`` mode: a triangle filter, widened by 1/scale when anti-aliasing (which
    OpenVINO applies to every resized axis once any axis shrinks), normalised per output."""
    c = _original_coords(a, n_in, n_out, scale)
    stretch = np.float32(scale) if antialias else np.float32(1)
    radius = 2 if scale > 1 else math.ceil(2 / float(stretch))
    center = _round_half_away(c).astype(np.int64)
    w = np.zeros((n_out, n_in), dtype=np.float64)
    rows = np.arange(n_out)
    for offset in range(-radius, radius + 1):
        src = center + offset
        ok = (src >= 0) & (src < n_in)
        dx = c - src.astype(np.float32)
        weight = np.maximum(0.0, 1.0 - np.abs(stretch * dx)).astype(np.float64)
        np.add.at(w, (rows[ok], src[ok]), weight[ok])
    total = w.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total != 0, w / np.where(total == 0, 1, total), 0.0)


def _pillow_resample(a: InterpolateAttrs, y: np.ndarray, axis: int, n_out: int) -> np.ndarray:
    """One Pillow resampling pass (``precompute_coeffs`` + ``imaging_resample_*``) along ``axis``:
    the filter is stretched by the downscale factor, so shrinking always anti-aliases, and
    coordinates ignore the transform mode. Weights and sums follow Pillow's order of float64
    operations, because integer images round after each pass and an ulp can flip a half."""
    cubic = a.mode == "bicubic_pillow"
    k = a.cube_coeff

    def filt(x: np.ndarray) -> np.ndarray:
        x = np.abs(x)
        if not cubic:
            return np.where(x < 1.0, 1.0 - x, 0.0)
        near = ((k + 2.0) * x - (k + 3.0)) * x * x + 1
        far = (((x - 5) * x + 8) * x - 4) * k
        return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))

    n_in = y.shape[axis]
    scale = float(np.float32(n_in)) / n_out
    filterscale = max(scale, 1.0)
    support = (2.0 if cubic else 1.0) * filterscale
    taps = math.ceil(support) * 2 + 1
    center = (np.arange(n_out) + 0.5) * scale
    # C casts truncate toward zero, as Python's int() and np.trunc do.
    lo = np.maximum(np.trunc(center - support + 0.5).astype(np.int64), 0)
    count = np.minimum(np.trunc(center + support + 0.5).astype(np.int64), n_in) - lo
    ss = 1.0 / filterscale
    weights = np.zeros((taps, n_out))
    total = np.zeros(n_out)
    for t in range(taps):
        w = np.where(t < count, filt((t + lo - center + 0.5) * ss), 0.0)
        weights[t] = w
        total += w
    weights = np.where(total != 0, weights / np.where(total == 0, 1.0, total), weights)
    shape = [1] * y.ndim
    shape[axis] = n_out
    out = np.zeros([n_out if d == axis else s for d, s in enumerate(y.shape)], dtype=np.float64)
    for t in range(taps):
        src = np.take(y, np.minimum(lo + t, n_in - 1), axis=axis).astype(np.float64)
        # Taps past an output's window are skipped, not multiplied by zero (inf * 0 is NaN).
        out += np.where((t < count).reshape(shape), src * weights[t].reshape(shape), 0.0)
    return out
