"""Shared machinery of the Reduce* operations: inputs ``data`` and ``axes``, attribute
``keep_dims``; the output drops (or keeps as 1) the reduced dimensions.

Per the specification an empty ``axes`` is the identity, axes may be negative (counted from the
end) and must lie in ``[-r, r-1]``. Repeated axes, which OpenVINO accepts, reduce once.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from opforge.element_type import Type
from opforge.errors import KernelError
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._elementwise import check_type_class
from opforge.opset._numeric_cast import finfo
from opforge.shape import PartialShape


class ReductionAttrs(OpAttrs):
    keep_dims: bool = False


class Reduction(Op):
    """Subclasses set ``type_name``, ``version``, ``accepts`` and implement ``reduce``."""
    value_inputs = (1,)
    cost_class = CostClass.REDUCING

    Attrs = ReductionAttrs
    min_inputs = 2
    max_inputs = 2
    accepts: ClassVar[str] = "numeric"

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        attrs: ReductionAttrs = ctx.attrs  # type: ignore[assignment]
        t = ctx.input_type(0)
        check_type_class(ctx, t, cls.accepts, "input 0 (data)")
        ta = ctx.input_type(1)
        if ta is not Type.dynamic and not ta.is_integral:
            raise ctx.error(f"input 1 (axes) has element type {ta}, expected an integer type")
        axes_shape = ctx.input_shape(1)
        if axes_shape.rank is not None and axes_shape.rank > 1:
            raise ctx.error(f"input 1 (axes) must be a scalar or 1-D, got shape {axes_shape}")
        data = ctx.input_shape(0)
        value = ctx.input_value(1)
        if value is not None:
            if value.size == 0:
                return [TensorSpec(t, data)]
            if data.rank is None:
                return [TensorSpec(t, PartialShape.dynamic())]
            axes = _normalize(ctx, value, data.rank)
            return [TensorSpec(t, reduced_shape(data, axes, attrs.keep_dims))]
        return [TensorSpec(t, _shape_for_unknown_axes(ctx, data, axes_shape, attrs.keep_dims))]

    @classmethod
    def reduce(cls, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """The reduction over ``axes`` (non-empty, normalized), keeping them as size-1 dims."""
        raise KernelError(f"{cls.type_name} defines no reduce()")

    @classmethod
    def evaluate(cls, attrs: ReductionAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x, axes_in = inputs
        flat = np.asarray(axes_in).reshape(-1)
        if flat.size == 0:
            return [x.copy()]
        axes = tuple(sorted({int(a) + x.ndim if int(a) < 0 else int(a) for a in flat}))
        bad = [int(a) for a in flat if not -x.ndim <= int(a) < x.ndim]
        if bad:
            raise KernelError(
                f"{cls.type_name}: axes {bad} are out of range [{-x.ndim}, {x.ndim - 1}] for a tensor "
                f"of rank {x.ndim}"
            )
        with np.errstate(all="ignore"):
            y = np.asarray(cls.reduce(x, axes)).astype(x.dtype, copy=False)
        if not attrs.keep_dims:
            y = y.reshape([d for i, d in enumerate(x.shape) if i not in axes])
        return [y]


def _normalize(ctx: InferContext, value: np.ndarray, rank: int) -> set[int]:
    axes: set[int] = set()
    for a in (int(v) for v in np.asarray(value).reshape(-1)):
        if not -rank <= a < rank:
            raise ctx.error(f"axis {a} is out of range [{-rank}, {rank - 1}] for data of rank {rank}")
        axes.add(a + rank if a < 0 else a)
    return axes


def reduced_shape(data: PartialShape, axes: set[int], keep_dims: bool) -> PartialShape:
    if keep_dims:
        return PartialShape([1 if i in axes else d for i, d in enumerate(data.dims)])
    return PartialShape([d for i, d in enumerate(data.dims) if i not in axes])


def _shape_for_unknown_axes(
    ctx: InferContext, data: PartialShape, axes_shape: PartialShape, keep_dims: bool
) -> PartialShape:
    """The best shape when the axes' values are unknown: their count may still be."""
    count: int | None = None
    if axes_shape.rank == 0:
        count = 1
    elif axes_shape.rank == 1:
        count = axes_shape[0]
    if count == 0:
        return data
    if data.rank is None:
        return PartialShape.dynamic()
    if data.rank == 0:
        # A scalar has no axis, so only an empty ``axes`` is valid, and it is the identity.
        if count is None:
            return data
        raise ctx.error("data is a scalar, which has no axis to reduce")
    if keep_dims:
        return PartialShape.dynamic(data.rank)
    # Repeated axes are accepted, so only a single axis pins down the output rank.
    if count == 1:
        return PartialShape.dynamic(data.rank - 1)
    return PartialShape.dynamic()


# --- reductions shared by several operations -------------------------------------------------
def float_sum(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """A float sum accumulated in f64, so the reference is at least as accurate as any device."""
    return np.sum(x.astype(np.float64), axis=axes, keepdims=True)


def is_float(x: np.ndarray) -> bool:
    return Type.from_numpy(x.dtype).is_float


def reduce_sum(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    if is_float(x):
        return float_sum(x, axes)
    # Integers accumulate in their own type and wrap around, as OpenVINO's reference does.
    return np.sum(x, axis=axes, keepdims=True, dtype=x.dtype)


def reduced_count(x: np.ndarray, axes: tuple[int, ...]) -> int:
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def running_extreme(x: np.ndarray, axes: tuple[int, ...], largest: bool) -> np.ndarray:
    """The maximum (``largest``) or minimum over ``axes``: a NaN element makes the result NaN (as
    in ONNX Runtime; OpenVINO's running max/min skips NaN), and a reduction over no elements gives
    the start value, the lowest (for a maximum) or largest (for a minimum) value of the type."""
    if is_float(x):
        info = finfo(x.dtype)
        fn, start = (np.maximum, info.min) if largest else (np.minimum, info.max)
        return fn.reduce(x.astype(np.float64), axis=axes, keepdims=True, initial=float(start))
    ints = np.iinfo(x.dtype)
    if largest:
        return np.max(x, axis=axes, keepdims=True, initial=ints.min)
    return np.min(x, axis=axes, keepdims=True, initial=ints.max)
