"""Activation functions and Softmax/LogSoftmax, with attributes other than the defaults and the
IEEE special values where the function is defined on them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from opforge.testing.cases import OpCase, case
from opforge.testing.models import const, fixed, special, tensor


def _np(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    def expect(xs: list[np.ndarray]) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [np.asarray(fn(xs[0])).astype(xs[0].dtype)]
    return expect


def _softmax_masked(xs: list[np.ndarray]) -> list[np.ndarray]:
    x = xs[0].astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return [(e / e.sum(axis=-1, keepdims=True)).astype(np.float32)]


_X = tensor(2, 3, 4, 5, low=-4, high=4)
CASES: list[OpCase] = [
    case("Relu", _X),
    case("Relu", tensor(3, 17, dtype="f16"), rtol=1e-3, atol=1e-3),
    case("Relu", tensor(3, 4, dtype="i32", low=-9, high=9)),
    case("Relu", special(), label="f32_special", expect=_np(lambda x: np.where(np.isnan(x), x, np.maximum(x, 0)))),
    case("Sigmoid", _X),
    case("Sigmoid", tensor(3, 17, dtype="f16"), rtol=2e-3, atol=2e-3),
    case("Sigmoid", special(), label="f32_special", expect=_np(lambda x: 1 / (1 + np.exp(-x)))),
    case("Clamp", _X, min=-1.5, max=2.0),
    case("Clamp", tensor(3, 4, dtype="i32", low=-9, high=9), min=-3.0, max=4.0),
    case("Clamp", special(), label="f32_special", min=-1.0, max=1.0, expect=_np(lambda x: np.clip(x, -1.0, 1.0))),
    case("Elu", _X, alpha=0.7),
    case("Gelu", _X, approximation_mode="ERF", label="f32_erf", rtol=1e-4, atol=1e-5),
    case("Gelu", _X, approximation_mode="TANH", label="f32_tanh", rtol=1e-4, atol=1e-5),
    case("HSigmoid", tensor(2, 3, 4, 5, low=-5, high=5)),
    case("HSwish", tensor(2, 3, 4, 5, low=-5, high=5)),
    case("Mish", _X, rtol=1e-4, atol=1e-5),
    case("SoftPlus", tensor(2, 3, 4, 5, low=-10, high=25), rtol=1e-5, atol=1e-5),
    case("SoftSign", _X),
    case("Swish", _X),
    case("Swish", _X, fixed(0.75), label="f32_beta"),
    case("Selu", _X, const([1.67326], "f32"), const([1.0507], "f32")),
    case("PRelu", _X, tensor(3, low=0, high=0.5), label="f32_channel_slope"),
    case("PRelu", _X, tensor(1, low=0, high=0.5), label="f32_scalar_slope"),
    case("PRelu", tensor(3, 5), tensor(5, low=0, high=0.5), label="f32_rank2"),
    case("Softmax", _X, axis=1, rtol=1e-5, atol=1e-6),
    case("Softmax", _X, axis=3, label="f32_last_axis"),
    case("Softmax", _X, axis=-1, label="f32_negative_axis"),
    case("Softmax", tensor(4, 33, dtype="f16"), axis=1, rtol=3e-3, atol=1e-3),
    case("Softmax", fixed([[0.0, -np.inf, 1.0, -np.inf], [-np.inf, 2.0, 2.0, -np.inf]]), axis=1,
         label="f32_masked", expect=_softmax_masked),
    case("LogSoftmax", _X, axis=1, rtol=1e-5, atol=1e-5),
    case("LogSoftmax", _X, axis=-1, label="f32_negative_axis", rtol=1e-5, atol=1e-5),
]

# edges: empty, large magnitudes (exp would overflow without the max shift), a NaN in a row
CASES += [
    case("Softmax", tensor(3, 0), axis=1, label="f32_empty"),
    case("Softmax", tensor(2, 5, low=-100, high=100), axis=1, label="f32_large"),
    case("Softmax", fixed([[np.nan, 1.0, 2.0], [0.0, 1.0, 2.0]]), axis=1, label="f32_nan_row",
         expect=lambda xs: [np.array([[np.nan] * 3, np.exp([0.0, 1, 2]) / np.exp([0.0, 1, 2]).sum()], np.float32)]),
    case("LogSoftmax", tensor(2, 5, low=-100, high=100), axis=1, label="f32_large", rtol=1e-5, atol=1e-4),
    case("Sigmoid", tensor(1031, dtype="f16"), label="f16_1031", rtol=2e-3, atol=2e-3),
]

# a per-channel slope shaped [C, 1, 1] (broadcast from the channel axis) and a constant beta
CASES += [
    case("PRelu", _X, tensor(3, 1, 1, low=0, high=0.5), label="f32_channel_slope_c11"),
    case("Swish", _X, const(1.5, "f32"), label="f32_const_beta"),
]
# a row longer than one work-group's worth of elements
CASES += [case("Softmax", tensor(4, 300), axis=1, label="f32_long_rows"),
          case("LogSoftmax", tensor(4, 300), axis=1, label="f32_long_rows")]
