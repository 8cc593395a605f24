"""Cases whose Parameters have dynamic dimensions: the device learns the shapes only when the
model runs, so its specialization to static shapes (and, for Reshape/Broadcast/Tile fed by
constants, shape arithmetic at run time) is exercised, not just its kernels. One case per op
family that devices specialize differently."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.testing.cases import OpCase, case
from opforge.testing.models import const, fixed, tensor

_D: dict[str, Any] = {"dynamic": True}
CASES: list[OpCase] = [
    case("Add", tensor(2, 3, 4), tensor(3, 1), **_D),
    case("Relu", tensor(2, 3, 17), **_D),
    case("MatMul", tensor(2, 3, 4), tensor(4, 5), rtol=1e-5, atol=1e-5, **_D),
    case("Softmax", tensor(2, 3, 5), axis=-1, **_D),
    case("ReduceMean", tensor(2, 3, 5), const([1, 2]), keep_dims=True, **_D),
    case("Concat", tensor(2, 3), tensor(2, 2), axis=1, **_D),
    case("Reshape", tensor(2, 3, 4), const([0, -1]), special_zero=True, **_D),
    case("Transpose", tensor(2, 3, 4), const([2, 0, 1]), **_D),
    case("Gather", tensor(4, 3), const([3, 0, 1]), const(0), **_D),
    case("Convolution", tensor(1, 2, 6, 5), tensor(3, 2, 3, 3), strides=[1, 1], pads_begin=[1, 1],
         pads_end=[1, 1], dilations=[1, 1], rtol=1e-4, atol=1e-4, **_D),
    case("MaxPool", tensor(1, 2, 6, 7), kernel=[2, 2], strides=[2, 2], dilations=[1, 1], pads_begin=[0, 0],
         pads_end=[0, 0], **_D),
    case("Broadcast", tensor(3, 1), const([2, 3, 4]), mode="numpy", **_D),
    case("Tile", tensor(2, 3), const([2, 2]), **_D),
    case("Slice", tensor(5, 6), const([1, 0]), const([4, 6]), const([2, 2]), **_D),
    case("Interpolate", tensor(1, 2, 4, 5), const([2.0, 1.5], "f32"), const([2, 3]), mode="nearest",
         shape_calculation_mode="scales", **_D),
    case("ShapeOf", tensor(2, 3, 4), **_D),
    case("TopK", tensor(3, 10), const(4), axis=1, mode="max", sort="value", **_D),
    case("NonZero", tensor(3, 4, dtype="i32", low=0, high=1), **_D),
]

# shape-deciding inputs (target shapes, pads, k, axes, shifts) fed at run time, not constants:
# the device must read their values before it can plan (its "value inputs")
CASES += [
    case("Reshape", tensor(2, 3, 4), fixed([4, 6], "i64"), special_zero=False, label="f32_shape_fed"),
    case("Broadcast", tensor(3, 1), fixed([2, 3, 4], "i64"), mode="numpy", label="f32_target_fed"),
    case("Tile", tensor(2, 3), fixed([2, 2], "i64"), label="f32_repeats_fed"),
    case("Pad", tensor(2, 3), fixed([1, 0], "i64"), fixed([0, 2], "i64"), fixed(1.5), pad_mode="constant",
         label="f32_pads_and_value_fed"),
    case("TopK", tensor(3, 10), fixed(np.int64(3), "i64"), axis=1, mode="max", sort="value", label="f32_k_fed"),
    case("Roll", tensor(3, 4), fixed([1, -2], "i64"), fixed([0, 1], "i64"), label="f32_shift_and_axes_fed"),
    case("Slice", tensor(5, 6), fixed([1, 0], "i64"), fixed([4, 5], "i64"), fixed([1, 2], "i64"),
         label="f32_bounds_fed"),
    case("ReduceSum", tensor(2, 3, 4), fixed([0, 2], "i64"), keep_dims=True, label="f32_axes_fed"),
    case("Interpolate", tensor(1, 2, 3, 4), fixed([5, 6], "i64"), const([2, 3]), mode="nearest",
         shape_calculation_mode="sizes", label="f32_sizes_fed"),
    case("OneHot", const([0, 2, 1]), fixed(np.int64(4), "i64"), const(1.0, "f32"), const(0.0, "f32"), axis=-1,
         label="i64_depth_fed"),
    # more values than the CPU's 16-element limit on value inputs (the GPU's is 4096)
    case("Reshape", tensor(4, 5), fixed([20] + [1] * 16, "i64"), special_zero=False, label="f32_17_values_fed"),
]
