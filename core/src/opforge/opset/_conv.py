"""Shared machinery of Convolution, GroupConvolution and their BackpropData (transposed) forms.

A plain convolution is a grouped one with one group, so one implementation serves both: data
``[N, G * C_in_g, spatial...]`` and filters ``[G, C_out_g, C_in_g, kernel...]`` (forward) or
``[G, C_in_g, C_out_g, kernel...]`` (backprop). The forward reference gathers the windows
(im2col, through a strided view) and does one batched matmul; when those columns would not fit
in memory it loops over the kernel positions instead, one matmul each. The transposed reference
does one matmul per kernel position and scatter-adds the results into the output.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import field_validator

from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import cast_to, check_integral, lower_enum, same_type, to_work, work_dtype
from opforge.opset._window import (
    AutoPad,
    check_lengths,
    check_positive,
    dilated,
    pad_spatial,
    resolve_pads,
    window_count,
    window_slices,
)
from opforge.shape import Dim, PartialShape


class ConvolutionAttrs(OpAttrs):
    strides: list[int]
    pads_begin: list[int]
    pads_end: list[int]
    dilations: list[int]
    auto_pad: AutoPad = "explicit"

    _auto_pad = field_validator("auto_pad", mode="before")(lower_enum)


class ConvolutionBackpropDataAttrs(ConvolutionAttrs):
    # Empty means zeros, as in OpenVINO.
    output_padding: list[int] = []


def _mul(dims: list[Dim]) -> Dim:
    out = 1
    for d in dims:
        if d is None:
            return None
        out *= d
    return out


class _ConvBase(Op):
    """What the four convolutions share: the input checks and the filter layout."""

    grouped: ClassVar[bool] = False
    backprop: ClassVar[bool] = False

    @classmethod
    def _what(cls, n: int) -> str:
        return f"{n}-D {'group ' if cls.grouped else ''}{'backprop ' if cls.backprop else ''}convolution"

    @classmethod
    def _num_spatial(cls, ctx: InferContext) -> int:
        a: ConvolutionAttrs = ctx.attrs  # type: ignore[assignment]
        extra = 1 if cls.grouped else 0
        ds, fs = ctx.input_shape(0), ctx.input_shape(1)
        if ds.rank is not None:
            if not 3 <= ds.rank <= 5:
                raise ctx.error(f"input 0 (data) has rank {ds.rank}, expected 3, 4 or 5 ([N, C, spatial...])")
            n = ds.rank - 2
        elif fs.rank is not None:
            n = fs.rank - 2 - extra
        else:
            n = len(a.strides)
        if fs.rank is not None and fs.rank != n + 2 + extra:
            raise ctx.error(
                f"input 1 (filters) has rank {fs.rank}, expected {n + 2 + extra} for {cls._what(n)}"
            )
        if not 1 <= n <= 3:
            raise ctx.error(f"{n} spatial axes; expected 1, 2 or 3")
        lengths = {"strides": a.strides, "dilations": a.dilations}
        if a.auto_pad == "explicit":
            lengths.update(pads_begin=a.pads_begin, pads_end=a.pads_end)
        check_lengths(ctx, n, cls._what(n), **lengths)
        check_positive(ctx, strides=a.strides, dilations=a.dilations)
        return n

    @classmethod
    def _filter_dims(cls, ctx: InferContext, n: int) -> tuple[Dim, Dim, Dim, list[Dim]]:
        """(groups, per-group input channels, per-group output channels, kernel) from the filters."""
        fs = ctx.input_shape(1)
        extra = 1 if cls.grouped else 0
        f: list[Dim] = list(fs.dims) if fs.rank is not None else [None] * (n + 2 + extra)
        groups: Dim = f[0] if cls.grouped else 1
        first, second = f[extra], f[extra + 1]
        c_in_g, c_out_g = (first, second) if cls.backprop else (second, first)
        return groups, c_in_g, c_out_g, f[extra + 2 :]

    @classmethod
    def _check_channels(cls, ctx: InferContext, c_in: Dim, groups: Dim, c_in_g: Dim) -> None:
        if c_in is None or c_in_g is None:
            return
        if cls.grouped:
            if groups is not None and groups * c_in_g != c_in:
                raise ctx.error(
                    f"input 0 (data) has {c_in} channels, but filters expect {groups} groups x "
                    f"{c_in_g} channels = {groups * c_in_g}"
                )
        elif c_in != c_in_g:
            dim = 0 if cls.backprop else 1
            raise ctx.error(
                f"input 0 (data) has {c_in} channels (dimension 1), but input 1 (filters) expects "
                f"{c_in_g} (dimension {dim})"
            )


class ConvolutionForward(_ConvBase):
    Attrs = ConvolutionAttrs
    min_inputs = 2
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ConvolutionAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_type(ctx, [(0, "data"), (1, "filters")])
        n = cls._num_spatial(ctx)
        ds = ctx.input_shape(0)
        d: list[Dim] = list(ds.dims) if ds.rank is not None else [None] * (n + 2)
        groups, c_in_g, c_out_g, kernel = cls._filter_dims(ctx, n)
        cls._check_channels(ctx, d[1], groups, c_in_g)
        spatial: list[Dim] = []
        pb, pe = resolve_pads(d[2:], kernel, a.strides, a.dilations, a.pads_begin, a.pads_end, a.auto_pad)
        for i in range(n):
            size = d[2 + i]
            if a.auto_pad in ("same_upper", "same_lower"):
                # The output is ceil(size / stride) whatever the kernel.
                spatial.append(None if size is None else -(-size // a.strides[i]))
            else:
                spatial.append(
                    window_count(ctx, i, size, kernel[i], a.strides[i], a.dilations[i], pb[i], pe[i])
                )
        return [TensorSpec(t, PartialShape([d[0], _mul([groups, c_out_g]), *spatial]))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, w = inputs[0], inputs[1]
        if not cls.grouped:
            w = w[np.newaxis]
        return [conv_forward(attrs, x, w)]


_IM2COL_BYTES = 256 << 20


def _windows(
    x: np.ndarray, n: int, kernel: tuple[int, ...], strides: list[int], dilations: list[int], out: list[int]
) -> np.ndarray:
    """Read-only view [..., out..., kernel...] of the windows over the last ``n`` axes of ``x``."""
    lead = x.ndim - n
    sp = x.strides[lead:]
    return np.lib.stride_tricks.as_strided(
        x,
        shape=(*x.shape[:lead], *out, *kernel),
        strides=(
            *x.strides[:lead],
            *(sp[i] * strides[i] for i in range(n)),
            *(sp[i] * dilations[i] for i in range(n)),
        ),
        writeable=False,
    )


def conv_forward(a: ConvolutionAttrs, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Grouped convolution of ``x`` [N, G*Ci, S...] with ``w`` [G, Co, Ci, K...]."""
    n = x.ndim - 2
    groups, c_out_g, c_in_g = w.shape[:3]
    kernel = w.shape[3:]
    batch = x.shape[0]
    pb, pe = resolve_pads(x.shape[2:], kernel, a.strides, a.dilations, a.pads_begin, a.pads_end, a.auto_pad)
    xp = pad_spatial(to_work(x), n, pb, pe)  # type: ignore[arg-type]
    out = [(xp.shape[2 + i] - dilated(kernel[i], a.dilations[i])) // a.strides[i] + 1 for i in range(n)]
    positions = int(np.prod(out))
    xg = xp.reshape(batch, groups, c_in_g, *xp.shape[2:])
    wk = to_work(w)
    taps = int(np.prod(kernel))
    if batch * groups * positions * c_in_g * taps * xp.itemsize <= _IM2COL_BYTES:
        # One big matmul over gathered columns: fastest when the columns fit in memory.
        view = _windows(xg, n, kernel, a.strides, a.dilations, out)  # [N, G, Ci, O..., K...]
        order = [0, 1, *range(3, 3 + n), 2, *range(3 + n, 3 + 2 * n)]
        cols = view.transpose(order).reshape(batch, groups, positions, c_in_g * taps)
        acc = cols @ np.swapaxes(wk.reshape(groups, c_out_g, c_in_g * taps), 1, 2)
    else:
        acc = np.zeros((batch, groups, positions, c_out_g), dtype=xp.dtype)
        for k in np.ndindex(*kernel):
            start = [k[i] * a.dilations[i] for i in range(n)]
            sel: tuple[Any, ...] = (Ellipsis, *window_slices(start, out, a.strides))
            patch = xg[sel]
            cols = np.moveaxis(patch.reshape(batch, groups, c_in_g, positions), 2, 3)  # [N, G, P, Ci]
            acc += cols @ np.swapaxes(wk[(..., *k)], 1, 2)  # [G, Ci, Co]
    y = np.moveaxis(acc, 3, 2).reshape(batch, groups * c_out_g, *out)
    return cast_to(y, x.dtype)


class ConvolutionBackprop(_ConvBase):
    Attrs = ConvolutionBackpropDataAttrs
    value_inputs = (2,)
    cost_class = CostClass.COMPUTE
    backprop = True
    min_inputs = 2
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ConvolutionBackpropDataAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_type(ctx, [(0, "data"), (1, "filters")])
        n = cls._num_spatial(ctx)
        if a.output_padding:
            check_lengths(ctx, n, cls._what(n), output_padding=a.output_padding)
        ds = ctx.input_shape(0)
        d: list[Dim] = list(ds.dims) if ds.rank is not None else [None] * (n + 2)
        groups, c_in_g, c_out_g, kernel = cls._filter_dims(ctx, n)
        cls._check_channels(ctx, d[1], groups, c_in_g)
        spatial: list[Dim]
        if ctx.num_inputs == 3:
            check_integral(ctx, 2, "output_shape")
            os = ctx.input_shape(2)
            if os.rank is not None and (os.rank != 1 or (os[0] is not None and os[0] != n)):
                raise ctx.error(
                    f"input 2 (output_shape) has shape {os}, expected [{n}] (one size per spatial axis)"
                )
            v = ctx.input_value(2)
            spatial = [None] * n if v is None else [int(s) for s in np.asarray(v).reshape(-1)]
            if any(s is not None and s < 0 for s in spatial):
                raise ctx.error(f"input 2 (output_shape) is {spatial}, expected non-negative sizes")
        else:
            explicit = a.auto_pad == "explicit"
            op = a.output_padding or [0] * n
            spatial = []
            for i in range(n):
                size, k = d[2 + i], kernel[i]
                if size is None or k is None:
                    spatial.append(None)
                    continue
                pads = a.pads_begin[i] + a.pads_end[i] if explicit else 0
                s = a.strides[i] * (size - 1) + dilated(k, a.dilations[i]) - pads + op[i]
                if s < 0:
                    raise ctx.error(f"spatial axis {i}: the output size {s} is negative (padding too large)")
                spatial.append(s)
        return [TensorSpec(t, PartialShape([d[0], _mul([groups, c_out_g]), *spatial]))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, w = inputs[0], inputs[1]
        if not cls.grouped:
            w = w[np.newaxis]
        out_shape = None if len(inputs) < 3 else [int(s) for s in np.asarray(inputs[2]).reshape(-1)]
        return [conv_backprop(attrs, x, w, out_shape)]


def backprop_pads(
    a: ConvolutionBackpropDataAttrs,
    in_dims: tuple[int, ...],
    kernel: tuple[int, ...],
    out_shape: list[int] | None,
) -> tuple[list[int], list[int]]:
    """(pads_begin, output sizes) of a transposed convolution, as OpenVINO resolves them."""
    n = len(in_dims)
    op = a.output_padding or [0] * n
    full = [a.strides[i] * (in_dims[i] - 1) + dilated(kernel[i], a.dilations[i]) for i in range(n)]
    if out_shape is None:
        if a.auto_pad == "explicit":
            return list(a.pads_begin), [full[i] - a.pads_begin[i] - a.pads_end[i] + op[i] for i in range(n)]
        return [0] * n, [full[i] + op[i] for i in range(n)]
    if a.auto_pad == "explicit":
        return list(a.pads_begin), out_shape
    if a.auto_pad == "valid":
        return [0] * n, out_shape
    begin = []
    for i in range(n):
        # Output larger than the full result: OpenVINO pads nothing and appends zeros.
        total = max(0, full[i] - out_shape[i] + op[i])
        small = total // 2
        begin.append(total - small if a.auto_pad == "same_upper" else small)
    return begin, out_shape


def conv_backprop(
    a: ConvolutionBackpropDataAttrs, x: np.ndarray, w: np.ndarray, out_shape: list[int] | None
) -> np.ndarray:
    """Grouped transposed convolution of ``x`` [N, G*Ci, S...] with ``w`` [G, Ci, Co, K...]."""
    n = x.ndim - 2
    groups, c_in_g, c_out_g = w.shape[:3]
    kernel = w.shape[3:]
    batch, in_dims = x.shape[0], x.shape[2:]
    begin, out = backprop_pads(a, in_dims, kernel, out_shape)
    full = [a.strides[i] * (in_dims[i] - 1) + dilated(kernel[i], a.dilations[i]) for i in range(n)]
    positions = int(np.prod(in_dims))
    dt = work_dtype(x.dtype)
    xm = np.moveaxis(to_work(x).reshape(batch, groups, c_in_g, positions), 2, 3)  # [N, G, P, Ci]
    wk = to_work(w)
    y = np.zeros((batch, groups, c_out_g, *full), dtype=dt)
    for k in np.ndindex(*kernel):
        contrib = np.moveaxis(xm @ wk[(..., *k)], 3, 2)  # [N, G, Co, P]
        start = [k[i] * a.dilations[i] for i in range(n)]
        sel: tuple[Any, ...] = (Ellipsis, *window_slices(start, in_dims, a.strides))
        y[sel] += contrib.reshape(batch, groups, c_out_g, *in_dims)
    # Output position j reads full position j + pads_begin; outside the full result it is zero.
    y = pad_spatial(y, n, [-b for b in begin], [out[i] + begin[i] - full[i] for i in range(n)])
    return cast_to(y.reshape(batch, groups * c_out_g, *out), x.dtype)
