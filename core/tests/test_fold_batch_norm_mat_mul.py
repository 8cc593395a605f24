"""fold_batch_norm's MatMul form (stop 26): MatMul (constant f32 weights) [-> Reshape keeping the
last axis] -> BatchNormInference of a 2-D tensor becomes the MatMul with scaled columns, an Add of
the shift, then the Reshape; same values by the reference before and after. Near-misses stay."""

from __future__ import annotations

import numpy as np
import pytest
from graph_building import const, op, param, rand, types_of
from opforge import Model, Node
from opforge.graph import Value
from opforge.reference import evaluate_model
from opforge.transformations.fold_batch_norm import FoldBatchNormIntoConvolution


def _bn(data: Value, channels: int) -> Node:
    g, b, m = (const(rand((channels,), 10 + k)) for k in range(3))
    v = const(rand((channels,), 13, 0.5, 1.5))
    return op("BatchNormInference", data, g, b, m, v, epsilon=1e-5, name="bn")


def _check(model: Model, feed: list[np.ndarray]) -> list[str]:
    want = evaluate_model(model, feed)
    FoldBatchNormIntoConvolution().run(model)
    got = evaluate_model(model, feed)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    return types_of(model)


@pytest.mark.parametrize("transpose_b", [False, True])
def test_flattened_linear_batch_norm_folds(transpose_b: bool) -> None:
    x = param([1, 7, 5])
    w = rand((6, 5) if transpose_b else (5, 6), 1)
    mm = op("MatMul", x, const(w), transpose_b=transpose_b)
    flat = op("Reshape", mm, const([7, 6], np.int64), special_zero=False)
    model = Model([op("Relu", _bn(flat, 6))], [x])
    assert _check(model, [rand((1, 7, 5), 9)]) == ["MatMul", "Add", "Reshape", "Relu"]
    reshape = model.results[0].inputs[0].node.inputs[0].node
    assert reshape.name == "bn" and reshape.type_name == "Reshape"


def test_two_d_mat_mul_batch_norm_folds_without_a_reshape() -> None:
    x = param([4, 5])
    model = Model([_bn(op("MatMul", x, const(rand((5, 3), 2))), 3)], [x])
    assert _check(model, [rand((4, 5), 8)]) == ["MatMul", "Add"]


def test_switch_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPFORGE_CPU_BN_MATMUL_FOLD", "0")
    x = param([4, 5])
    model = Model([_bn(op("MatMul", x, const(rand((5, 3), 2))), 3)], [x])
    assert FoldBatchNormIntoConvolution().run(model) == 0


def test_near_misses_stay() -> None:
    x = param([1, 7, 5])
    # a Reshape that splits the MatMul's columns: the BN's channels are not the columns
    mm = op("MatMul", x, const(rand((5, 6), 1)))
    model = Model([_bn(op("Reshape", mm, const([14, 3], np.int64), special_zero=False), 3)], [x])
    assert FoldBatchNormIntoConvolution().run(model) == 0
    # the MatMul read by someone else
    mm = op("MatMul", x, const(rand((5, 6), 1)))
    flat = op("Reshape", mm, const([7, 6], np.int64), special_zero=False)
    model = Model([op("Result", _bn(flat, 6)), op("Result", mm)], [x])
    assert FoldBatchNormIntoConvolution().run(model) == 0
    # weights computed at run time
    w = param([5, 6], "w")
    model = Model([_bn(op("MatMul", param([4, 5]), w), 6)], [w])
    assert FoldBatchNormIntoConvolution().run(model) == 0
