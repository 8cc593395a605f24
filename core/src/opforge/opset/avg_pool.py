"""AvgPool-1: average over sliding windows.

With ``exclude-pad`` the divisor counts only input elements; without it, it also counts padding
elements, but never positions past pads_end that ceil rounding lets a window reach (OpenVINO's
behaviour). A window with nothing to count divides by zero (NaN).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import ConfigDict, Field, field_validator

from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._nn_util import cast_to, lower_enum, same_type, to_work
from opforge.opset._pool import padded_windows, pool_geometry, pool_output_shape, pool_spatial_rank
from opforge.opset._window import AutoPad, resolve_pads


class AvgPoolAttrs(OpAttrs):
    # The IR name has a hyphen; Python spells the field exclude_pad and accepts either name.
    model_config = ConfigDict(populate_by_name=True)

    kernel: list[int]
    strides: list[int]
    pads_begin: list[int]
    pads_end: list[int]
    exclude_pad: bool = Field(alias="exclude-pad")
    rounding_type: Literal["floor", "ceil"] = "floor"
    auto_pad: AutoPad = "explicit"

    _enums = field_validator("rounding_type", "auto_pad", mode="before")(lower_enum)


_IR_NAMES = {"exclude_pad": "exclude-pad"}
_PY_NAMES = {v: k for k, v in _IR_NAMES.items()}


class AvgPool(Op):
    type_name = "AvgPool"
    version = "opset1"
    Attrs = AvgPoolAttrs

    @classmethod
    def attrs_to_ir(cls, attrs: OpAttrs) -> dict[str, str]:
        return {_IR_NAMES.get(k, k): v for k, v in super().attrs_to_ir(attrs).items()}

    @classmethod
    def attrs_from_ir(cls, node_name: str, data: dict[str, str]) -> OpAttrs:
        return super().attrs_from_ir(node_name, {_PY_NAMES.get(k, k): v for k, v in data.items()})

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: AvgPoolAttrs = ctx.attrs  # type: ignore[assignment]
        t = same_type(ctx, [(0, "data")])
        n = pool_spatial_rank(ctx, a.kernel)
        ones = [1] * n
        shape = pool_output_shape(
            ctx, a.kernel, a.strides, ones, a.pads_begin, a.pads_end, a.auto_pad, a.rounding_type
        )
        if a.exclude_pad:
            ds = ctx.input_shape(0)
            spatial = list(ds.dims[2:]) if ds.rank is not None else [None] * n
            pb, pe = resolve_pads(spatial, a.kernel, a.strides, ones, a.pads_begin, a.pads_end, a.auto_pad)
            for i in range(n):
                if any(p is not None and p >= a.kernel[i] for p in (pb[i], pe[i])):
                    raise ctx.error(
                        f"spatial axis {i}: kernel {a.kernel[i]} fits entirely in the padding "
                        f"({pb[i]} before, {pe[i]} after), which exclude-pad does not allow"
                    )
        return [TensorSpec(t, shape)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: AvgPoolAttrs = attrs
        x = inputs[0]
        n = x.ndim - 2
        in_dims = x.shape[2:]
        ones = [1] * n
        begin, end, out = pool_geometry(
            in_dims, a.kernel, a.strides, ones, a.pads_begin, a.pads_end, a.auto_pad, a.rounding_type
        )
        view = padded_windows(to_work(x), a.kernel, a.strides, ones, begin, out, 0)
        sums = view.sum(axis=tuple(range(2 + n, 2 + 2 * n)))
        count = np.ones((1,) * n)
        for i in range(n):
            start = np.arange(out[i]) * a.strides[i] - begin[i]
            lo, hi = (0, in_dims[i]) if a.exclude_pad else (-begin[i], in_dims[i] + end[i])
            c = np.clip(start + a.kernel[i], lo, hi) - np.clip(start, lo, hi)
            count = count * c.reshape((-1,) + (1,) * (n - 1 - i))
        with np.errstate(invalid="ignore", divide="ignore"):
            y = sums / count
        return [cast_to(y, x.dtype)]
