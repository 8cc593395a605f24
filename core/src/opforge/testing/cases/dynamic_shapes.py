"""Cases whose Parameters have dynamic dimensions: the device learns the shapes only when the
model runs, so its specialisation to static shapes (and, for Reshape/Broadcast/Tile fed by
constants, shape arithmetic at run time) is exercised, not just its kernels. One case per op
family that devices specialise differently."""

from __future__ import annotations

from typing import Any

from opforge.testing.cases import OpCase, case
from opforge.testing.models import const, tensor

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
