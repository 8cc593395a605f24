"""Range-4: ``start, start + step, ...`` up to (excluding) ``stop``, of ``output_type``.

For an integer ``output_type`` start, stop and step are truncated to integers first, as in
OpenVINO (so a step that truncates to 0 yields an empty range).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import field_validator

from opforge.element_type import Type
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.opset._shape_util import ShapeError, ceil_div, check_rank
from opforge.shape import PartialShape


class RangeAttrs(OpAttrs):
    # Required by the specification: it has no default in OpenVINO either.
    output_type: Type

    @field_validator("output_type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Type:
        t = Type.parse(v)
        if t in (Type.boolean, Type.dynamic):
            raise ValueError(f"output_type must be a numeric type, got {t.ir}")
        return t


def _number(a: np.ndarray) -> int | float:
    v = np.asarray(a).reshape(()).item()
    return int(v) if isinstance(v, (int, bool)) else float(v)


def range_params(
    out: Type, start_v: np.ndarray, stop_v: np.ndarray, step_v: np.ndarray
) -> tuple[int | float, int | float, int]:
    """(start, step, length) of the range."""
    start, stop, step = _number(start_v), _number(stop_v), _number(step_v)
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, float) and not math.isfinite(v):
            raise ShapeError(f"{name} must be finite, got {v}")
    if step == 0:
        raise ShapeError("step must not be 0")
    if out.is_integral:
        start, stop, step = math.trunc(start), math.trunc(stop), math.trunc(step)
        if step == 0:
            return start, step, 0
        return start, step, max(0, ceil_div(stop - start, step))
    return start, step, max(0, math.ceil((stop - start) / step))


class Range(Op):
    type_name = "Range"
    value_inputs = (0, 1, 2)
    scalar_inputs = (0, 1, 2)
    version = "opset4"
    Attrs = RangeAttrs
    min_inputs = 3
    max_inputs = 3

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: RangeAttrs = ctx.attrs  # type: ignore[assignment]
        for i, name in enumerate(("start", "stop", "step")):
            t = ctx.input_type(i)
            if t is Type.boolean:
                raise ctx.error(f"{name} (input {i}) must be numeric, got {t}")
            check_rank(ctx, i, name, (0,))
        values = [ctx.input_value(i) for i in range(3)]
        if any(v is None for v in values):
            return [TensorSpec(a.output_type, PartialShape([None]))]
        try:
            _, _, n = range_params(a.output_type, *values)  # type: ignore[arg-type]
        except ShapeError as err:
            raise ctx.error(str(err)) from None
        return [TensorSpec(a.output_type, PartialShape([n]))]

    @classmethod
    def evaluate(cls, attrs: RangeAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        out = attrs.output_type
        start, step, n = range_params(out, *inputs)
        if out.is_integral:
            # Computed in int64, then wrapped to the output type as a C++ cast would.
            with np.errstate(over="ignore"):
                values = np.int64(start) + np.int64(step) * np.arange(n, dtype=np.int64)
            return [values.astype(out.np)]
        dt = out.np
        # Element i is start + i * step in the output type's arithmetic, as OpenVINO computes it.
        return [(np.asarray(start, dt) + np.arange(n).astype(dt) * np.asarray(step, dt)).astype(dt)]
