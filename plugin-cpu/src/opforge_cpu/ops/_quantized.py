"""What the quantized (int8) ops share: their scale/zero-point attributes and a NumPy reference of
the arithmetic their oneDNN kernels do; and (at the end) what the byte-wise ones that requantize
one input (QuantizedAvgPool, QuantizedInterpolate) and check their grids (those and
QuantizedEltwise, QuantizedConcat) share.

The real-valued computation is ``y = op(s_x * (x - z_x), s_w[c] * w) + bias``, then the fused
element-wise post-ops, then either ``y`` itself (f32 output) or
``saturate(round_half_to_even(y / s_y) + z_y)`` in u8/i8: exactly DequantizeLinear ->
op -> [Add bias] -> [Relu/Clip] -> QuantizeLinear of the QDQ graph it replaces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import numpy as np
from opforge.element_type import Type
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec

from opforge_cpu.ops._cpu_op import CpuOp
from opforge_cpu.ops.dequantize import Dequantize, DequantizeAttrs
from opforge_cpu.ops.quantize import Quantize, QuantizeAttrs

#: the element types a quantized op may produce
OutputType = Literal["u8", "i8", "f32"]


class QuantizationAttrs(OpAttrs):
    """Per-tensor activation scales and zero points; per-output-channel weight scales are input 2."""

    src_scale: float
    src_zero_point: int = 0
    #: ignored for an f32 output
    dst_scale: float = 1.0
    dst_zero_point: int = 0
    output_type: OutputType = "f32"
    #: index of the input holding a quantized tensor added to the result before the post-ops
    #: (a residual Add, run as oneDNN's sum post-op over the output buffer): real value
    #: sum_scale * (q - sum_zero_point); -1 when there is none
    sum_input: int = -1
    sum_scale: float = 1.0
    sum_zero_point: int = 0
    #: [lo, hi] the result is clamped to before the residual operand is added (the range of the
    #: grid the QDQ graph quantized it to); empty: no clamp
    sum_clamp: list[float] = []
    #: fused element-wise tail as (op type, attributes) pairs, the emitter's encoding of fused
    #: nodes: ("Relu", {}) and ("Clamp", {"min": lo, "max": hi})
    post_ops: list[tuple[str, dict[str, float]]] = []


class QuantizedOp(CpuOp):
    """Inputs: 0 data (u8 or i8), 1 weights (i8 constant), 2 weight scales (f32 [C_out]),
    3 optional bias (f32 [C_out], in real units, added after the scales), then the optional
    residual operand named by the ``sum_input`` attribute (u8/i8 of the output's shape)."""

    cost_class = CostClass.COMPUTE
    min_inputs = 3
    max_inputs = 5
    #: what each quantized op defines (checked when the subclass is created, not at first use)
    _HOOKS: ClassVar[tuple[str, ...]] = ("inner_op", "inner_attrs", "scale_weights", "channel_shaped")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        missing = [h for h in cls._HOOKS if getattr(cls, h).__func__ is getattr(QuantizedOp, h).__func__]
        if missing:
            raise TypeError(f"{cls.__name__} (a QuantizedOp) must define {', '.join(missing)}")

    @classmethod
    def _base_hook(cls, name: str) -> TypeError:
        return TypeError(f"QuantizedOp.{name} is defined by each quantized op, not by the base class")

    @classmethod
    def inner_op(cls, data_rank: int | None, weights_rank: int | None) -> type[Op]:
        """The standard op computing the real-valued product (shape inference, reference)."""
        raise cls._base_hook("inner_op")

    @classmethod
    def inner_attrs(cls, attrs: Any) -> OpAttrs:
        raise cls._base_hook("inner_attrs")

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: QuantizationAttrs = ctx.attrs  # type: ignore[assignment]
        if ctx.input_type(0) not in (Type.u8, Type.i8):
            raise ctx.error(f"input 0 (data) is {ctx.input_type(0).ir}, expected u8 or i8")
        if ctx.input_type(1) is not Type.i8:
            raise ctx.error(f"input 1 (weights) is {ctx.input_type(1).ir}, expected i8")
        n_params = ctx.num_inputs - (1 if a.sum_input >= 0 else 0)
        if a.sum_input >= 0 and a.sum_input != n_params:
            raise ctx.error(f"sum_input is {a.sum_input}, expected {n_params} (the last input)")
        for i in range(2, n_params):
            if ctx.input_type(i) is not Type.f32:
                raise ctx.error(f"input {i} ({'weight scales' if i == 2 else 'bias'}) is {ctx.input_type(i).ir}, expected f32")
        specs = [TensorSpec(Type.f32, ctx.input_shape(0)), TensorSpec(Type.f32, ctx.input_shape(1))]
        op = cls.inner_op(ctx.input_shape(0).rank, ctx.input_shape(1).rank)
        shape = op.infer(InferContext(ctx.node_name, op, cls.inner_attrs(a), specs, [None, None]))[0].shape
        out = Type.parse(a.output_type)
        if a.sum_input >= 0 and (ctx.input_type(a.sum_input) is not out or ctx.input_shape(a.sum_input) != shape):
            raise ctx.error(f"input {a.sum_input} (the residual operand) is {ctx.input_type(a.sum_input).ir} "
                            f"{ctx.input_shape(a.sum_input)}, expected the output's {out.ir} {shape}")
        return [TensorSpec(out, shape)]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        a: QuantizationAttrs = attrs
        x = (inputs[0].astype(np.float64) - a.src_zero_point) * a.src_scale
        w = cls.scale_weights(inputs[1].astype(np.float64), np.asarray(inputs[2], np.float64))
        op = cls.inner_op(inputs[0].ndim, inputs[1].ndim)
        y = np.asarray(op.evaluate(cls.inner_attrs(a), [x, w])[0], np.float64)
        n_params = len(inputs) - (1 if a.sum_input >= 0 else 0)
        if n_params > 3:
            y = y + cls.channel_shaped(np.asarray(inputs[3], np.float64), y.ndim)
        if a.sum_input >= 0:
            if a.sum_clamp:
                y = np.clip(y, a.sum_clamp[0], a.sum_clamp[1])
            y = y + (inputs[a.sum_input].astype(np.float64) - a.sum_zero_point) * a.sum_scale
        y = apply_post_ops(y, a.post_ops)
        return [requantize(y, a)]

    @classmethod
    def scale_weights(cls, w: np.ndarray, scales: np.ndarray) -> np.ndarray:
        raise cls._base_hook("scale_weights")

    @classmethod
    def channel_shaped(cls, v: np.ndarray, rank: int) -> np.ndarray:
        """A per-output-channel vector shaped to broadcast against the output."""
        raise cls._base_hook("channel_shaped")


def apply_post_ops(y: np.ndarray, post_ops: list[tuple[str, dict[str, float]]]) -> np.ndarray:
    for name, attrs in post_ops:
        if name == "Relu":
            y = np.maximum(y, 0.0)
        elif name == "Clamp":
            y = np.clip(y, float(attrs["min"]), float(attrs["max"]))
        else:
            raise ValueError(f"quantized op: fused {name} has no reference")
    return y


def requantize(y: np.ndarray, a: QuantizationAttrs) -> np.ndarray:
    if a.output_type == "f32":
        return y.astype(np.float32)
    t = np.dtype(np.uint8 if a.output_type == "u8" else np.int8)
    info = np.iinfo(t)
    q = np.rint(y / a.dst_scale) + a.dst_zero_point
    return np.clip(q, info.min, info.max).astype(t)


# --- the byte-wise ops -------------------------------------------------------------------------
class RequantizedAttrs(OpAttrs):
    """The grids of a byte-wise op over one u8/i8 input: it computes on ``src_scale * (x -
    src_zero_point)`` and writes ``saturate(round_half_to_even(y / dst_scale) + dst_zero_point)``
    in ``output_type``."""

    src_scale: float
    src_zero_point: int = 0
    dst_scale: float
    dst_zero_point: int = 0
    output_type: Literal["u8", "i8"] = "u8"


def check_int8_input(ctx: InferContext, i: int) -> None:
    if ctx.input_type(i) not in (Type.u8, Type.i8):
        raise ctx.error(f"input {i} is {ctx.input_type(i).ir}, expected u8 or i8")


def check_scales(ctx: InferContext, *scales: float) -> None:
    if not all(s > 0 and np.isfinite(s) for s in scales):
        raise ctx.error(f"scales ({', '.join(str(s) for s in scales)}) must be positive and finite")


def infer_requantized(ctx: InferContext, inner: type[Op], attrs: RequantizedAttrs) -> list[TensorSpec]:
    """Output of a byte-wise op computing ``inner`` on its dequantized input 0: the input and the
    grids checked, then ``inner``'s shape rule on an f32 view of input 0 (the other inputs, sizes
    or scales, as they are), in ``output_type``."""
    check_int8_input(ctx, 0)
    check_scales(ctx, attrs.src_scale, attrs.dst_scale)
    specs = [TensorSpec(Type.f32, ctx.input_shape(0))]
    specs += [TensorSpec(ctx.input_type(i), ctx.input_shape(i)) for i in range(1, ctx.num_inputs)]
    values = [None] + [ctx.input_value(i) for i in range(1, ctx.num_inputs)]
    spec = inner.infer(InferContext(ctx.node_name, inner, attrs, specs, values))[0]
    return [TensorSpec(Type.parse(attrs.output_type), spec.shape)]


def evaluate_requantized(attrs: RequantizedAttrs, op: Callable[[np.ndarray], np.ndarray],
                         x: np.ndarray) -> list[np.ndarray]:
    """The reference of such an op: DequantizeLinear of ``x`` -> ``op`` -> QuantizeLinear."""
    real = Dequantize.evaluate(DequantizeAttrs(scale=attrs.src_scale, zero_point=attrs.src_zero_point), [x])[0]
    out = QuantizeAttrs(scale=attrs.dst_scale, zero_point=attrs.dst_zero_point, output_type=attrs.output_type)
    return Quantize.evaluate(out, [op(real)])
