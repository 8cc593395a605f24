"""Shared machinery of element-wise operations (unary and binary with auto-broadcast)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import numpy as np

from opforge.element_type import Type
from opforge.errors import KernelError, ModelValidationError
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import ShapeError, numpy_broadcast
from opforge.shape import PartialShape


class UnaryElementwise(Op):
    """y = f(x), same type and shape. Subclasses set ``type_name`` and implement ``compute``."""

    min_inputs = 1
    max_inputs = 1
    #: element types the op accepts (None: any)
    accepts: ClassVar[str] = "numeric"  # "numeric" | "float" | "any" | "boolean" | "integral"

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = ctx.input_type(0)
        check_type_class(ctx, t, cls.accepts, "input 0")
        return [TensorSpec(t, ctx.input_shape(0))]

    @classmethod
    def compute(cls, attrs: Any, x: np.ndarray) -> np.ndarray:
        raise KernelError(f"{cls.type_name} defines no compute()")

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        with np.errstate(all="ignore"):
            y = cls.compute(attrs, x)
        return [np.asarray(y).astype(x.dtype, copy=False)]


class FloatPredicate(UnaryElementwise):
    """y = f(x) for float x: a boolean of x's shape (IsFinite, IsInf, IsNaN). Subclasses set
    ``type_name`` and implement ``compute``, which gets f16/bf16 data as f32 (exact), since
    bfloat16 is not a NumPy floating kind."""

    accepts = "float"

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        check_type_class(ctx, ctx.input_type(0), cls.accepts, "input 0")
        return [TensorSpec(Type.boolean, ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        v = inputs[0].astype(np.float32) if inputs[0].dtype.itemsize < 4 else inputs[0]
        return [np.asarray(cls.compute(attrs, v), dtype=np.bool_)]


def check_type_class(ctx: InferContext, t: Type, accepts: str, what: str) -> None:
    if t is Type.dynamic or accepts == "any":
        return
    ok = {
        "numeric": t is not Type.boolean,
        "float": t.is_float,
        "boolean": t is Type.boolean,
        "integral": t.is_integral,
        "integral_or_boolean": t.is_integral or t is Type.boolean,
    }[accepts]
    if not ok:
        raise ctx.error(f"{what} has element type {t}, expected a {accepts.replace('_', ' ')} type")


class BroadcastAttrs(OpAttrs):
    auto_broadcast: Literal["numpy", "none", "pdpd"] = "numpy"


def broadcast_shapes(ctx: InferContext, a: PartialShape, b: PartialShape, mode: str = "numpy") -> PartialShape:
    """NumPy-style broadcast of two partial shapes (``none``: shapes must match)."""
    if mode == "none":
        try:
            return a.merge(b)
        except ModelValidationError:
            raise ctx.error(f"input shapes {a} and {b} differ and auto_broadcast is 'none'") from None
    if mode == "pdpd" and a.rank is not None and b.rank is not None and b.rank <= a.rank:
        return a
    try:
        return numpy_broadcast(a, b)
    except ShapeError as err:
        raise ctx.error(f"input {err}") from None


def pdpd_align(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """Reshape ``b`` so it broadcasts against ``a`` PaddlePaddle-style (aligned at ``axis``)."""
    if b.ndim == a.ndim:
        return b
    start = axis if axis >= 0 else a.ndim - b.ndim
    return b.reshape((1,) * start + b.shape + (1,) * (a.ndim - start - b.ndim))


class BinaryElementwise(Op):
    """z = f(x, y) with NumPy broadcasting. Subclasses set ``type_name`` and implement
    ``compute``; comparison/logical ops set ``output_boolean``."""

    Attrs = BroadcastAttrs
    min_inputs = 2
    max_inputs = 2
    accepts: ClassVar[str] = "numeric"
    output_boolean: ClassVar[bool] = False

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        ta, tb = ctx.input_type(0), ctx.input_type(1)
        if ta is not Type.dynamic and tb is not Type.dynamic and ta != tb:
            raise ctx.error(f"inputs have different element types: {ta} and {tb}")
        t = ta if ta is not Type.dynamic else tb
        check_type_class(ctx, t, cls.accepts, "inputs")
        shape = broadcast_shapes(ctx, ctx.input_shape(0), ctx.input_shape(1), ctx.attrs.auto_broadcast)  # type: ignore[attr-defined]
        return [TensorSpec(Type.boolean if cls.output_boolean else t, shape)]

    @classmethod
    def compute(cls, attrs: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise KernelError(f"{cls.type_name} defines no compute()")

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a, b = inputs
        if getattr(attrs, "auto_broadcast", "numpy") == "pdpd":
            b = pdpd_align(a, b)
        with np.errstate(all="ignore"):
            y = np.asarray(cls.compute(attrs, a, b))
        dtype = np.bool_ if cls.output_boolean else a.dtype
        return [y.astype(dtype, copy=False)]


ComputeFn = Callable[[np.ndarray], np.ndarray]
