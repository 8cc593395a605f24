"""Shared machinery of the Fourier-transform operations DFT, IDFT, RDFT and IRDFT.

Complex tensors are real tensors with a trailing dimension of 2 (real, imaginary). ``axes``
name the transformed dimensions (negative: counted from the end of the signal dimensions, i.e.
without the trailing 2 of a complex input). ``signal_size`` (optional, one value per axis, -1:
keep) crops or zero-pads each transformed dimension at its end before the transform, as NumPy's
``s=`` does. Inverse transforms scale by ``1 / prod(sizes)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, TensorSpec
from opforge.opset._nn_util import check_integral, const_ints
from opforge.shape import Dim, PartialShape


class FourierTransform(Op):
    """Subclasses set ``complex_input``, ``complex_output`` and ``inverse``."""
    value_inputs = (1, 2)
    cost_class = CostClass.REDUCING

    min_inputs = 2
    max_inputs = 3
    complex_input: ClassVar[bool]
    complex_output: ClassVar[bool]
    inverse: ClassVar[bool]

    @classmethod
    def signal_rank(cls, rank: int) -> int:
        return rank - 1 if cls.complex_input else rank

    @classmethod
    def norm_axes(cls, axes: list[int], rank: int) -> list[int]:
        r = cls.signal_rank(rank)
        out = []
        for ax in axes:
            if not -r <= ax < r:
                raise ValueError(f"axis {ax} is out of range for a signal of rank {r}")
            out.append(ax + r if ax < 0 else ax)
        if len(set(out)) != len(out):
            raise ValueError(f"axes {axes} repeat an axis")
        return out

    @classmethod
    def out_dims(cls, dims: list[Dim], axes: list[int], sizes: list[int] | None) -> list[Dim]:
        """Output dimensions (without a trailing 2) for input signal dims ``dims``."""
        out = list(dims)
        for k, ax in enumerate(axes):
            s = sizes[k] if sizes is not None else -1
            last = k == len(axes) - 1
            if s != -1:
                out[ax] = s // 2 + 1 if (last and not cls.inverse and not cls.complex_input) else s
            elif last and cls.complex_output and not cls.complex_input:  # RDFT: one-sided
                n = out[ax]
                out[ax] = None if n is None else n // 2 + 1
            elif last and cls.complex_input and not cls.complex_output:  # IRDFT: 2 (n - 1)
                n = out[ax]
                out[ax] = None if n is None else 2 * (n - 1)
        return out

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = ctx.input_type(0)
        if t is not Type.dynamic and not t.is_float:
            raise ctx.error(f"input 0 (data) has element type {t}, expected a floating-point type")
        check_integral(ctx, 1, "axes")
        if ctx.num_inputs > 2:
            check_integral(ctx, 2, "signal_size")
        d = ctx.input_shape(0)
        if d.rank is None:
            return [TensorSpec(t, PartialShape.dynamic())]
        if cls.complex_input and d.dims[-1] not in (None, 2):
            raise ctx.error(f"input 0 (data) has shape {d}; a complex input's last dimension must be 2")
        if d.rank < (2 if cls.complex_input else 1):
            raise ctx.error(f"input 0 (data) has shape {d}, too few dimensions")
        sig = list(d.dims[:-1] if cls.complex_input else d.dims)
        axes = const_ints(ctx, 1)
        tail: list[Dim] = [2] if cls.complex_output else []
        if axes is None:
            unknown: list[Dim] = [None] * len(sig)
            return [TensorSpec(t, PartialShape(unknown + tail))]
        try:
            ax = cls.norm_axes(axes, d.rank)
        except ValueError as err:
            raise ctx.error(str(err)) from None
        sizes = const_ints(ctx, 2) if ctx.num_inputs > 2 else None
        if sizes is not None and len(sizes) != len(ax):
            raise ctx.error(f"signal_size has {len(sizes)} values, expected one per axis ({len(ax)})")
        if ctx.num_inputs > 2 and sizes is None:
            out: list[Dim] = [None if i in ax else v for i, v in enumerate(sig)]
        else:
            out = cls.out_dims(sig, ax, sizes)
        return [TensorSpec(t, PartialShape(out + tail))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        data = inputs[0]
        axes = cls.norm_axes([int(v) for v in np.asarray(inputs[1]).reshape(-1)], data.ndim)
        x: np.ndarray[Any, Any] = data.astype(np.float64)
        if cls.complex_input:
            x = x[..., 0] + 1j * x[..., 1]
        sizes_in = [int(v) for v in np.asarray(inputs[2]).reshape(-1)] if len(inputs) > 2 else None
        dims = list(x.shape)
        s = [dims[ax] if sizes_in is None or sizes_in[k] == -1 else sizes_in[k] for k, ax in enumerate(axes)]
        if cls.complex_input and not cls.complex_output:  # IRDFT
            if sizes_in is None or sizes_in[-1] == -1:
                s[-1] = 2 * (dims[axes[-1]] - 1)
            y: np.ndarray[Any, Any] = np.fft.irfftn(x, s=s, axes=axes)
        elif not cls.complex_input:  # RDFT
            y = np.fft.rfftn(x, s=s, axes=axes)
        elif cls.inverse:
            y = np.fft.ifftn(x, s=s, axes=axes)
        else:
            y = np.fft.fftn(x, s=s, axes=axes)
        if cls.complex_output:
            y = np.stack([y.real, y.imag], axis=-1)
        return [np.ascontiguousarray(y).astype(data.dtype)]
