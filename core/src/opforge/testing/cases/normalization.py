"""Normalisations: BatchNormInference, MVN (both eps modes, with and without variance), NormalizeL2,
GRN, LRN and RMSNormalization (scale per element, broadcast and single; long rows)."""

from __future__ import annotations

from opforge.testing.cases import OpCase, case
from opforge.testing.models import const, tensor

_X = tensor(2, 3, 4, 5)
CASES: list[OpCase] = [
    case("BatchNormInference", _X, tensor(3), tensor(3), tensor(3), tensor(3, low=0.5, high=2), epsilon=1e-5, label="f32_nchw",
         rtol=1e-5, atol=1e-5),
    case("BatchNormInference", tensor(4, 3), tensor(3), tensor(3), tensor(3), tensor(3, low=0.5, high=2),
         epsilon=1e-3, label="f32_rank2", rtol=1e-5, atol=1e-5),
    case("MVN", _X, const([2, 3]), normalize_variance=True, eps=1e-6, eps_mode="inside_sqrt", rtol=1e-4, atol=1e-4),
    case("MVN", _X, const([1, 2, 3]), normalize_variance=True, eps=1e-3, eps_mode="outside_sqrt",
         label="f32_outside", rtol=1e-4, atol=1e-4),
    case("MVN", _X, const([-1]), normalize_variance=False, eps=1e-6, eps_mode="inside_sqrt",
         label="f32_mean_only", rtol=1e-5, atol=1e-5),
    case("NormalizeL2", _X, const([1]), eps=1e-6, eps_mode="add", rtol=1e-5, atol=1e-5),
    case("NormalizeL2", _X, const([2, 3]), eps=1e-2, eps_mode="max", label="f32_hw_max", rtol=1e-5, atol=1e-5),
    case("GRN", _X, bias=1e-3, rtol=1e-5, atol=1e-5),
    case("LRN", _X, const([1]), alpha=1e-2, beta=0.75, bias=1.0, size=3, rtol=1e-5, atol=1e-5),
    case("LRN", _X, const([2, 3]), alpha=1e-1, beta=0.5, bias=2.0, size=3, label="f32_spatial", rtol=1e-5, atol=1e-5),
]

# axes that are not contiguous
CASES += [
    case("MVN", _X, const([0, 2, 3]), normalize_variance=True, eps=1e-9, eps_mode="inside_sqrt",
         label="f32_scattered_axes", rtol=1e-4, atol=1e-4),
]

# RMSNormalization: scale over the last dim, over several trailing dims, broadcast inside them and
# one value; rows longer than a GPU work-group; f16 (computed in f32) and f64
CASES += [
    case("RMSNormalization", _X, tensor(5), axis=-1, epsilon=1e-5, label="f32_last", rtol=1e-5, atol=1e-5),
    case("RMSNormalization", _X, tensor(3, 4, 5), axis=1, epsilon=1e-5, label="f32_axis1", rtol=1e-5, atol=1e-5),
    case("RMSNormalization", _X, tensor(4, 1), axis=2, epsilon=0.1, label="f32_broadcast_scale", rtol=1e-5,
         atol=1e-5),
    case("RMSNormalization", _X, tensor(1), axis=0, epsilon=1e-6, label="f32_all_one_scale", rtol=1e-5, atol=1e-5),
    case("RMSNormalization", tensor(3, 1000), tensor(1000), axis=1, epsilon=1e-6, label="f32_long_rows", rtol=1e-5,
         atol=1e-5),
    case("RMSNormalization", tensor(4, 33, dtype="f16"), tensor(33, dtype="f16"), axis=-1, epsilon=1e-5,
         label="f16", rtol=3e-3, atol=3e-3),
    case("RMSNormalization", tensor(2, 3, 7, dtype="f64"), tensor(3, 7, dtype="f64"), axis=1, epsilon=1e-5,
         label="f64", rtol=1e-12, atol=1e-12),
]
