"""Indexing ops: Gather (negative indices, batch_dims), GatherElements, GatherND, OneHot, and
the scatters (ScatterUpdate, ScatterElementsUpdate with every reduction, ScatterNDUpdate both
versions). Indices are fixed so that scatters without a reduction write each place once."""

from __future__ import annotations

from opforge.testing.cases import OpCase, case
from opforge.testing.models import const, fixed, tensor

_X = tensor(3, 4, 5)
CASES: list[OpCase] = [
    case("Gather", _X, const([2, 0, 2], "i32"), const(1), label="f32_axis1"),
    case("Gather", _X, const([[0, -1], [1, -3]]), const(-1), label="f32_negative_indices_2d"),
    case("Gather", _X, fixed([1, 2, 0], "i64"), const(0), label="f32_fed_indices"),
    case("Gather", tensor(2, 3, 4, dtype="i32", low=-9, high=9), const([[0, 2], [1, 1]], "i32"), const(2),
         batch_dims=1, label="i32_batch_dims1"),
    case("Gather", tensor(5, dtype="i64", low=-9, high=9), const(3), const(0), label="i64_scalar_index"),
    case("GatherElements", tensor(3, 4), const([[0, 2], [1, 3], [3, 0]]), axis=1, label="f32_axis1"),
    case("GatherElements", tensor(3, 4), const([[2, 0, 1, 1], [0, 1, 2, 2]], "i32"), axis=0, label="f32_axis0"),
    case("GatherND", _X, const([[0, 1], [2, 3]]), label="f32_slices"),
    case("GatherND", _X, const([[0, 1, 2], [2, 3, 4]], "i32"), label="f32_elements"),
    case("GatherND", tensor(2, 3, 4), const([[1], [2]]), batch_dims=1, label="f32_batch_dims1"),
    case("OneHot", const([0, 2, 1, 3]), const(4), const(1.0, "f32"), const(0.0, "f32"), axis=-1, label="f32_last"),
    case("OneHot", fixed([[1, 0], [2, 5]], "i32"), const(3, "i32"), const(5, "i32"), const(-1, "i32"), axis=0,
         label="i32_axis0_out_of_range"),

    case("ScatterUpdate", tensor(4, 3), const([2, 0]), tensor(2, 3), const(0), label="f32_rows"),
    case("ScatterUpdate", tensor(3, 5), const([[4, 1]], "i32"), tensor(3, 1, 2), const(1), label="f32_axis1_2d_idx"),
    case("ScatterElementsUpdate", tensor(3, 4), const([[1, 0, 2, 0], [2, 1, 0, 1]]), tensor(2, 4), const(0),
         label="f32_none"),
    case("ScatterElementsUpdate", tensor(3, 4), const([[1, 1, 3], [0, 0, 0]]), tensor(2, 3), const(1),
         reduction="sum", label="f32_sum_duplicates"),
    case("ScatterElementsUpdate", tensor(3, 4), const([[1, 1, 3], [0, 0, 0]]), tensor(2, 3), const(1),
         reduction="max", use_init_val=False, label="f32_max_no_init"),
    case("ScatterElementsUpdate", tensor(3, 4), const([[1, 1, 3], [0, 0, 0]]), tensor(2, 3), const(1),
         reduction="mean", label="f32_mean"),
    case("ScatterElementsUpdate", tensor(3, 4), const([[1, 1, 3], [0, 0, 0]]), tensor(2, 3, low=0.5, high=1.5),
         const(1), reduction="prod", label="f32_prod"),
    case("ScatterElementsUpdate", tensor(3, 4, dtype="i32", low=-9, high=9), const([[1, 2, 3]]),
         tensor(1, 3, dtype="i32", low=-9, high=9), const(-1), reduction="min", label="i32_min"),
    case("ScatterNDUpdate", tensor(4, 3), const([[2], [0]]), tensor(2, 3), version="opset4", label="f32_rows"),
    case("ScatterNDUpdate", tensor(3, 4), const([[0, 1], [2, 3], [1, 0]], "i32"), tensor(3), version="opset4",
         label="f32_elements"),
    case("ScatterNDUpdate", tensor(4, 3), const([[2], [0]]), tensor(2, 3), version="opset15", label="f32_none"),
    case("ScatterNDUpdate", tensor(3, 4), const([[0, 1], [0, 1], [2, 2]]), tensor(3), version="opset15",
         reduction="sum", label="f32_sum_duplicates"),
    case("ScatterNDUpdate", tensor(3, 4, dtype="i32", low=-9, high=9), const([[1], [1]]),
         tensor(2, 4, dtype="i32", low=-9, high=9), version="opset15", reduction="max", label="i32_max"),
]

# the ScatterNDUpdate reductions the cases above leave out
CASES += [
    case("ScatterNDUpdate", tensor(3, 4), const([[0, 1], [0, 1], [2, 2]]), tensor(3), version="opset15",
         reduction=_red, label=f"f32_{_red}")
    for _red in ("sub", "prod", "min")
]

# ScatterUpdate with a scalar index and with no index at all
CASES += [
    case("ScatterUpdate", tensor(4), const(2), tensor(), const(0), label="f32_scalar_index"),
    case("ScatterUpdate", tensor(3, 4), const([], "i64"), tensor(3, 0), const(1), label="f32_no_indices"),
]
