"""CumSum-3: cumulative sums along ``axis`` (the optional second input, 0 when absent).

``exclusive`` leaves out each element from its own sum (the first sum is 0); ``reverse`` sums
from the end of the axis. Float sums are accumulated in f64; integers wrap around.
"""

from __future__ import annotations

import numpy as np

from opforge.element_type import Type
from opforge.errors import KernelError
from opforge.op import CostClass, InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._elementwise import check_type_class


class CumSumAttrs(OpAttrs):
    exclusive: bool = False
    reverse: bool = False


class CumSum(Op):
    type_name = "CumSum"
    cost_class = CostClass.REDUCING
    value_inputs = (1,)
    scalar_inputs = (1,)
    version = "opset3"
    Attrs = CumSumAttrs
    min_inputs = 1
    max_inputs = 2

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        t = ctx.input_type(0)
        check_type_class(ctx, t, "numeric", "input 0 (data)")
        data = ctx.input_shape(0)
        if data.rank == 0:
            raise ctx.error("input 0 (data) must have rank 1 or more, got a scalar")
        if ctx.num_inputs == 2:
            ta = ctx.input_type(1)
            if ta not in (Type.dynamic, Type.i32, Type.i64):
                raise ctx.error(f"input 1 (axis) has element type {ta}, expected int32 or int64")
            axis_shape = ctx.input_shape(1)
            # OpenVINO also accepts a one-element 1-D axis where the specification says scalar.
            if axis_shape.rank is not None and not (
                axis_shape.rank == 0 or (axis_shape.rank == 1 and axis_shape[0] in (1, None))
            ):
                raise ctx.error(f"input 1 (axis) must be a scalar, got shape {axis_shape}")
            value = ctx.input_value(1)
            if value is not None and data.rank is not None:
                axis = int(np.asarray(value).reshape(-1)[0])
                if not -data.rank <= axis < data.rank:
                    raise ctx.error(
                        f"axis {axis} is out of range [{-data.rank}, {data.rank - 1}] for data of rank "
                        f"{data.rank}"
                    )
        return [TensorSpec(t, data)]

    @classmethod
    def evaluate(cls, attrs: CumSumAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        axis = int(np.asarray(inputs[1]).reshape(-1)[0]) if len(inputs) > 1 else 0
        if not -x.ndim <= axis < x.ndim:
            raise KernelError(f"CumSum: axis {axis} is out of range for a tensor of rank {x.ndim}")
        axis %= x.ndim
        is_float = Type.from_numpy(x.dtype).is_float
        work = x.astype(np.float64) if is_float else x
        if attrs.reverse:
            work = np.flip(work, axis)
        sums = np.cumsum(work, axis=axis, dtype=work.dtype)
        if attrs.exclusive:
            # Shift by one along the axis rather than subtract, which would not be exact for floats.
            sums = np.roll(sums, 1, axis=axis)
            index = [slice(None)] * x.ndim
            index[axis] = slice(0, 1)
            sums[tuple(index)] = 0
        if attrs.reverse:
            sums = np.flip(sums, axis)
        return [np.ascontiguousarray(sums).astype(x.dtype, copy=False)]
