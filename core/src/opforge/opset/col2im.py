"""Col2Im-15: the inverse of im2col. Sums sliding-block columns ``data`` [N, C * kh * kw, L]
(or unbatched [C * kh * kw, L]) back into an image [N, C, H, W] (or [C, H, W]) of spatial size
``output_size`` = (H, W), with blocks of ``kernel_size`` = (kh, kw) placed with ``strides``,
``dilations`` and ``pads_begin``/``pads_end``. Overlapping contributions add up; those that fall
into the padding are dropped. ``L`` must be the number of block positions.

Beyond OpenVINO (whose Col2Im-15 is 2-D only), opforge also folds volumes as ONNX's Col2Im does:
three-value ``output_size``/``kernel_size``/attributes give [N, C, D, H, W] from
[N, C * kd * kh * kw, L].
"""

from __future__ import annotations

import itertools
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
        for i in range(len(out))
    ]


class Col2Im(Op):
    type_name = "Col2Im"
    value_inputs = (1, 2)
    version = "opset15"
    Attrs = Col2ImAttrs
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: Col2ImAttrs = ctx.attrs  # type: ignore[assignment]
        sp = len(a.strides)  # 2 (OpenVINO's op) or 3 (volumes)
        if sp not in (2, 3):
            raise ctx.error(f"strides has {sp} values, expected 2 (or 3 for volumes)")
        for name in ("strides", "dilations", "pads_begin", "pads_end"):
            v = getattr(a, name)
            if len(v) != sp:
                raise ctx.error(f"{name} has {len(v)} values, expected {sp}")
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
            if v is not None and len(v) != sp:
                raise ctx.error(f"{name} has {len(v)} values, expected {sp}")
        if d.rank is None:
            return [TensorSpec(t, PartialShape.dynamic())]
        batched = d.rank == 3
        cols: Dim = d.dims[-2]
        c: Dim = None
        if kernel is not None:
            kk = int(np.prod(kernel))
            if min(kernel) <= 0:
                raise ctx.error(f"kernel_size must be positive, got {kernel}")
            if cols is not None:
                if cols % kk:
                    raise ctx.error(f"data has {cols} columns per block, not a multiple of the kernel size {kk}")
                c = cols // kk
            if out is not None and d.dims[-1] is not None:
                n_blocks = _blocks(a, out, kernel)
                if int(np.prod(n_blocks)) != d.dims[-1]:
                    raise ctx.error(
                        f"data has {d.dims[-1]} blocks, but output_size {out} and kernel_size {kernel} "
                        f"give {' x '.join(str(b) for b in n_blocks)}"
                    )
        hw: list[Dim] = list(out) if out is not None else [None] * sp
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
        sp = len(out)
        kk = int(np.prod(kernel))
        c = cols // kk
        nb = _blocks(a, out, kernel)
        if len(kernel) != sp or sp != len(a.strides) or cols % kk or int(np.prod(nb)) != length:
            raise ValueError(f"data of shape {list(data.shape)} does not match output_size {out} and kernel_size {kernel}")
        padded = np.zeros((n, c, *[out[i] + a.pads_begin[i] + a.pads_end[i] for i in range(sp)]), dtype=data.dtype)
        blocks = x.reshape(n, c, *kernel, *nb)
        for k in itertools.product(*[range(v) for v in kernel]):
            at = tuple(slice(k[i] * a.dilations[i], k[i] * a.dilations[i] + a.strides[i] * (nb[i] - 1) + 1, a.strides[i])
                       for i in range(sp))
            dst: tuple[Any, ...] = (slice(None), slice(None), *at)
            src: tuple[Any, ...] = (slice(None), slice(None), *k)
            padded[dst] += blocks[src]
        crop: tuple[Any, ...] = (slice(None), slice(None), *[slice(a.pads_begin[i], a.pads_begin[i] + out[i])
                                                             for i in range(sp)])
        y = padded[crop]
        y = np.ascontiguousarray(y)
        return [y if batched else y[0]]
