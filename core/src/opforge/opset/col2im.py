"""Col2Im-15: the inverse of im2col. Sums sliding-block columns ``data`` [N, C * kh * kw, L]
(or unbatched [C * kh * kw, L]) back into an image [N, C, H, W] (or [C, H, W]) of spatial size
``output_size`` = (H, W), with blocks of ``kernel_size`` = (kh, kw) placed with ``strides``,
``dilations`` and ``pads_begin``/``pads_end``. Overlapping contributions add up; those that fall
into the padding are dropped. ``L`` must be the number of block positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import check_integral, check_rank, const_ints
from opforge.shape import Dim, PartialShape


class Col2ImAttrs(OpAttrs):
    strides: list[int] = [1, 1]
    dilations: list[int] = [1, 1]
    pads_begin: list[int] = [0, 0]
    pads_end: list[int] = [0, 0]


def _blocks(a: Col2ImAttrs, out: list[int], kernel: list[int]) -> list[int]:
    return [
        (out[i] + a.pads_begin[i] + a.pads_end[i] - (a.dilations[i] * (kernel[i] - 1) + 1)) // a.strides[i] + 1
        for i in range(2)
    ]


class Col2Im(Op):
    type_name = "Col2Im"
    version = "opset15"
    Attrs = Col2ImAttrs
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: Col2ImAttrs = ctx.attrs  # type: ignore[assignment]
        for name in ("strides", "dilations", "pads_begin", "pads_end"):
            v = getattr(a, name)
            if len(v) != 2:
                raise ctx.error(f"{name} has {len(v)} values, expected 2")
            if name in ("strides", "dilations") and min(v) <= 0:
                raise ctx.error(f"{name} must be positive, got {v}")
            if min(v) < 0:
                raise ctx.error(f"{name} must not be negative, got {v}")
        check_integral(ctx, 1, "output_size")
        check_integral(ctx, 2, "kernel_size")
        check_rank(ctx, 0, "data", [2, 3])
        t = ctx.input_type(0)
        d = ctx.input_shape(0)
        out = const_ints(ctx, 1)
        kernel = const_ints(ctx, 2)
        for name, v in (("output_size", out), ("kernel_size", kernel)):
            if v is not None and len(v) != 2:
                raise ctx.error(f"{name} has {len(v)} values, expected 2")
        if d.rank is None:
            return [TensorSpec(t, PartialShape.dynamic())]
        batched = d.rank == 3
        cols: Dim = d.dims[-2]
        c: Dim = None
        if kernel is not None:
            kk = kernel[0] * kernel[1]
            if kk <= 0:
                raise ctx.error(f"kernel_size must be positive, got {kernel}")
            if cols is not None:
                if cols % kk:
                    raise ctx.error(f"data has {cols} columns per block, not a multiple of the kernel size {kk}")
                c = cols // kk
            if out is not None and d.dims[-1] is not None:
                n_blocks = _blocks(a, out, kernel)
                if n_blocks[0] * n_blocks[1] != d.dims[-1]:
                    raise ctx.error(
                        f"data has {d.dims[-1]} blocks, but output_size {out} and kernel_size {kernel} "
                        f"give {n_blocks[0]} x {n_blocks[1]}"
                    )
        hw: list[Dim] = list(out) if out is not None else [None, None]
        dims = ([d.dims[0]] if batched else []) + [c, *hw]
        return [TensorSpec(t, PartialShape(dims))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: Col2ImAttrs = attrs
        data = inputs[0]
        out = [int(v) for v in np.asarray(inputs[1]).reshape(-1)]
        kernel = [int(v) for v in np.asarray(inputs[2]).reshape(-1)]
        batched = data.ndim == 3
        x = data if batched else data[None]
        n, cols, length = x.shape
        kk = kernel[0] * kernel[1]
        c = cols // kk
        nb = _blocks(a, out, kernel)
        if cols % kk or nb[0] * nb[1] != length:
            raise ValueError(f"data of shape {list(data.shape)} does not match output_size {out} and kernel_size {kernel}")
        ph, pw = out[0] + a.pads_begin[0] + a.pads_end[0], out[1] + a.pads_begin[1] + a.pads_end[1]
        padded = np.zeros((n, c, ph, pw), dtype=data.dtype)
        blocks = x.reshape(n, c, kernel[0], kernel[1], nb[0], nb[1])
        for ky in range(kernel[0]):
            for kx in range(kernel[1]):
                y0, x0 = ky * a.dilations[0], kx * a.dilations[1]
                ys = slice(y0, y0 + a.strides[0] * (nb[0] - 1) + 1, a.strides[0])
                xs = slice(x0, x0 + a.strides[1] * (nb[1] - 1) + 1, a.strides[1])
                padded[:, :, ys, xs] += blocks[:, :, ky, kx]
        y = padded[:, :, a.pads_begin[0]:a.pads_begin[0] + out[0], a.pads_begin[1]:a.pads_begin[1] + out[1]]
        y = np.ascontiguousarray(y)
        return [y if batched else y[0]]
